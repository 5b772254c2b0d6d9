package crm

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"

	"listingproxy/wire"
)

// BenchmarkDecodeShapes decodes answers of ~1 MiB of different shapes and
// reports, per byte of XML, the bytes allocated (alloc/B) and the bytes the
// result keeps alive (kept/B), the figures behind the package
// documentation's memory bound:
//
//	go test -run '^$' -bench DecodeShapes -benchmem ./upstream/crm
//
// The pass-through variants keep each record as sent (Options.PassThrough)
// beside the model.
func BenchmarkDecodeShapes(b *testing.B) {
	const size = 1 << 20
	repeat := func(open, item, close string) []byte {
		return []byte(open + strings.Repeat(item, (size-len(open)-len(close))/len(item)) + close)
	}
	long := strings.Repeat("A fine home with a view of the harbour. ", 50)
	shapes := []struct {
		name string
		body []byte
	}{
		{"text-heavy records", repeat("<properties>", `<property id="1" last_updated="Mon Jan 02 15:04:05 +1100 2006"><address display="true">12 Smith Street</address><suburb>Bondi</suburb><description>`+long+`</description><photos count="2"><photo position="1">http://img/1.jpg</photo><photo position="2">http://img/2.jpg</photo></photos></property>`, "</properties>")},
		{"tiny records", repeat("<properties>", `<property id="1"/>`, "</properties>")},
		{"tiny photos", repeat(`<properties><property id="1"><photos>`, `<photo/>`, "</photos></property></properties>")},
		{"tiny unknown elements", repeat(`<properties><property id="1">`, `<x/>`, "</property></properties>")},
	}
	for _, keep := range []bool{false, true} {
		for _, sh := range shapes {
			name := sh.name
			if keep {
				name += "/pass-through"
			}
			b.Run(name, func(b *testing.B) {
				lim := limits{maxBytes: 1 << 30, maxElements: 1 << 30, maxDepth: 64}
				var ms runtime.MemStats
				var kept uint64
				b.SetBytes(int64(len(sh.body)))
				for i := 0; b.Loop(); i++ {
					var base uint64
					if i == 0 {
						runtime.GC()
						runtime.ReadMemStats(&ms)
						base = ms.HeapAlloc
					}
					d := newBoundedDecoder(b.Context(), bytes.NewReader(sh.body), lim, nil)
					props, err := wire.ReadPropertyList(d, time.UTC, true, 1<<30, wire.ReadOptions{Keep: keep})
					if err != nil {
						b.Fatal(err)
					}
					if i == 0 {
						runtime.GC()
						runtime.ReadMemStats(&ms)
						kept = ms.HeapAlloc - min(base, ms.HeapAlloc)
					}
					runtime.KeepAlive(props)
				}
				b.ReportMetric(float64(kept)/float64(len(sh.body)), "kept/B")
			})
		}
	}
}
