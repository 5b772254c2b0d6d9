package proxy_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"listingproxy/internal/testkit"
	"listingproxy/proxy"
	"listingproxy/upstream"
)

// discardWriter is a ResponseWriter that keeps nothing, so a benchmark
// measures the handler and not a recorder copying the body.
type discardWriter struct {
	h    http.Header
	n    int
	code int
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) WriteHeader(code int)        { d.code = code }
func (d *discardWriter) Write(p []byte) (int, error) { d.n += len(p); return len(p), nil }

// benchBackend returns a fake whose harbour/au list renders to a body of
// roughly the wanted size.
func benchBackend(properties int) *fakeBackend {
	fb := newFake()
	var ps []upstream.Property
	for i := range properties {
		p := fb.Properties["harbour/au"][0]
		p.ID = int64(100 + i)
		p.AgencyID = fmt.Sprintf("HB-AU-%05d", 100+i)
		p.Description = "A renovated family home close to the beach, schools and transport, with a big garden."
		for j := range 4 {
			p.Photos = append(p.Photos, upstream.Media{URL: fmt.Sprintf("https://img.example/%d/%d.jpg", i, j), Thumbnail: "https://img.example/t.jpg", Type: "Normal", Position: j + 1})
		}
		p.PhotoCount = len(p.Photos)
		ps = append(ps, p)
	}
	fb.Properties["harbour/au"] = ps
	return fb
}

// BenchmarkHit measures the cache-hit path through the real handler:
// authentication (memoised), criteria parsing, cache lookup and writing the
// stored bytes. Allocations must not grow with the body size.
func BenchmarkHit(b *testing.B) {
	cases := []struct {
		name, target string
		properties   int
	}{
		{"single-2KB", "/au/properties/100.xml", 1},
		{"list-40KB", "/au/properties.xml?detail=full&limit=50&status=current", 28},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			s := newServer(b, benchBackend(bc.properties), proxy.Options{Cache: newCache(b), Now: time.Now})
			r := httptest.NewRequest("GET", bc.target, nil)
			r.Header.Set("Authorization", basic("harbour"))
			w := &discardWriter{h: http.Header{}}
			s.ServeHTTP(w, r) // fill
			if w.code != 200 {
				b.Fatalf("status %d", w.code)
			}
			b.SetBytes(int64(w.n))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				clear(w.h)
				w.n = 0
				s.ServeHTTP(w, r)
			}
		})
	}
}

// BenchmarkHitKeys measures a hit among many warm keys, cycled in order:
// per-hit work must not grow with the number of hot keys (the criteria
// memo must hold them all, and nothing may be parsed or allocated again).
// Every key is a distinct query string with the same one-property body, so
// only the number of keys differs between the cases.
func BenchmarkHitKeys(b *testing.B) {
	for _, keys := range []int{1, 10000} {
		b.Run(fmt.Sprintf("keys-%d", keys), func(b *testing.B) {
			fb := benchBackend(1)
			s := newServer(b, fb, proxy.Options{Cache: newCache(b), Now: time.Now})
			rs := make([]*http.Request, keys)
			w := &discardWriter{h: http.Header{}}
			for i := range rs {
				rs[i] = httptest.NewRequest("GET", fmt.Sprintf("/au/properties.xml?limit=1&offset=%d", i), nil)
				rs[i].Header.Set("Authorization", basic("harbour"))
				s.ServeHTTP(w, rs[i]) // fill
				if w.code != 200 {
					b.Fatalf("status %d", w.code)
				}
				clear(w.h)
			}
			filled := fb.Calls()
			b.ReportAllocs()
			b.ResetTimer()
			i := 0
			cpu := testkit.CPUTime(b)
			for b.Loop() {
				clear(w.h)
				s.ServeHTTP(w, rs[i])
				if i++; i == keys {
					i = 0
				}
			}
			// CPU per hit: on a loaded machine ns/op also counts the time
			// other processes held the CPU. Run with -cpu 1 to count
			// ristretto's policy goroutine, as in a server pinned to one CPU.
			b.ReportMetric(float64(testkit.CPUTime(b)-cpu)/float64(b.N), "cpu-ns/op")
			// Backend calls after the warm-up: entries the cache let go.
			b.ReportMetric(float64(fb.Calls()-filled)/float64(b.N), "fills/op")
		})
	}
}
