package wire

import (
	"testing"

	"listingproxy/normalize"
)

// The benchmarks reuse one buffer across iterations, as a server that pools
// its buffers does; the steady state allocates nothing.

func BenchmarkAppendPropertyList_Full50(b *testing.B) {
	ps := benchProperties(50)
	o := Options{Detail: normalize.Full, Prices: true, Location: sydney(b)}
	for _, f := range formats {
		b.Run(f.String(), func(b *testing.B) {
			buf := AppendPropertyList(nil, f, ps, o)
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				buf = AppendPropertyList(buf[:0], f, ps, o)
			}
		})
	}
}

func BenchmarkAppendPropertyList_Short50(b *testing.B) {
	ps := benchProperties(50)
	o := Options{Detail: normalize.Short, Location: sydney(b)}
	for _, f := range formats {
		b.Run(f.String(), func(b *testing.B) {
			buf := AppendPropertyList(nil, f, ps, o)
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				buf = AppendPropertyList(buf[:0], f, ps, o)
			}
		})
	}
}

func BenchmarkAppendProperty(b *testing.B) {
	p := &benchProperties(1)[0]
	o := Options{Prices: true, Location: sydney(b)}
	for _, f := range formats {
		b.Run(f.String(), func(b *testing.B) {
			buf := AppendProperty(nil, f, p, o)
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				buf = AppendProperty(buf[:0], f, p, o)
			}
		})
	}
}

func BenchmarkAppendAgentList_Full(b *testing.B) {
	as := fixtureAgents()
	o := Options{Detail: normalize.Full, Location: sydney(b)}
	for _, f := range formats {
		b.Run(f.String(), func(b *testing.B) {
			buf := AppendAgentList(nil, f, as, o)
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				buf = AppendAgentList(buf[:0], f, as, o)
			}
		})
	}
}
