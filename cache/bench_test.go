package cache

import (
	"context"
	"fmt"
	"testing"
	"time"

	"listingproxy/internal/testkit"
)

func benchStore(b *testing.B, size int) (*Store, Loader) {
	s := newStore(b, Options{MaxBytes: 64 << 20})
	body := make([]byte, size)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	load := func(context.Context) (*Entry, error) {
		return NewEntry(body, "application/json", false, time.Now()), nil
	}
	if _, _, err := s.Get(context.Background(), key, pol, load); err != nil {
		b.Fatal(err)
	}
	return s, load
}

func BenchmarkGetHit(b *testing.B) {
	for _, bc := range []struct {
		name string
		size int
	}{{"2KB", 2 << 10}, {"40KB", 40 << 10}} {
		b.Run(bc.name, func(b *testing.B) {
			s, load := benchStore(b, bc.size)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, o, _ := s.Get(ctx, key, pol, load); o != Hit {
					b.Fatalf("outcome %v, want hit", o)
				}
			}
		})
	}
}

func BenchmarkGetHitParallel(b *testing.B) {
	for _, bc := range []struct {
		name string
		size int
	}{{"2KB", 2 << 10}, {"40KB", 40 << 10}} {
		b.Run(bc.name, func(b *testing.B) {
			s, load := benchStore(b, bc.size)
			ctx := context.Background()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, o, _ := s.Get(ctx, key, pol, load); o != Hit {
						b.Errorf("outcome %v, want hit", o)
						return
					}
				}
			})
		})
	}
}

// BenchmarkGetMiss measures a full fill: flight, loader, store and Wait.
func BenchmarkGetMiss(b *testing.B) {
	s := newStore(b, Options{MaxBytes: 64 << 20})
	body := make([]byte, 2<<10)
	load := func(context.Context) (*Entry, error) {
		return &Entry{Body: body, StoredAt: time.Now()}, nil
	}
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		k := Key{Tenant: "t", Resource: itoa(i)}
		if _, _, err := s.Get(ctx, k, pol, load); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNewEntry measures what a fill adds to the rendered body: the
// ETag and the gzip form of a 45 KB list (varied text, compressing about
// 6:1 like the demo's full lists).
func BenchmarkNewEntry(b *testing.B) {
	var body []byte
	for i := 0; len(body) < 45000; i++ {
		body = fmt.Appendf(body, `<property><id>%d</id><agencyID>HB-AU-%05d</agencyID><price>%d</price><description>A family home %d minutes from the beach, %d bedrooms.</description><photo url="https://img.example/%d/%d.jpg"/></property>`,
			i*7919%100003, i*31, 350000+i*1237, i%17, i%5+1, i*13, i%9)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		NewEntry(body, "application/xml", false, time.Time{})
	}
}

// BenchmarkFreshKeys measures Fresh, the proxy's hit lookup, among 1 or
// 10,000 warm keys cycled in order, in a store sized like bench/nginx.sh's
// (2 GiB) and like the default (256 MiB): the per-hit cost must not grow
// much with the number of hot keys (docs/performance.md, "Many hot keys").
// Run it with -cpu 1 to count ristretto's policy goroutine, which shares the
// CPU with the hits in a server pinned to one.
func BenchmarkFreshKeys(b *testing.B) {
	for _, maxBytes := range []int64{256 << 20, 2 << 30} {
		for _, n := range []int{1, 10000} {
			b.Run(fmt.Sprintf("%dMiB/keys-%d", maxBytes>>20, n), func(b *testing.B) {
				s := newStore(b, Options{MaxBytes: maxBytes})
				keys := make([]Key, n)
				for i := range keys {
					keys[i] = Key{Tenant: "harbour", Resource: "properties", Scope: "full|au|json",
						Variant: fmt.Sprintf("detail=full&limit=1&offset=%d&order=price", i)}
					body := make([]byte, 2<<10)
					load := func(context.Context) (*Entry, error) {
						return NewEntry(body, "application/json", false, time.Now()), nil
					}
					if _, _, err := s.Get(context.Background(), keys[i], pol, load); err != nil {
						b.Fatal(err)
					}
				}
				s.Wait()
				b.ReportAllocs()
				i, misses := 0, 0
				cpu0 := testkit.CPUTime(b)
				for b.Loop() {
					if _, _, _, ok := s.Fresh(keys[i], pol); !ok {
						misses++
					}
					if i++; i == n {
						i = 0
					}
				}
				b.ReportMetric(float64(testkit.CPUTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
				b.ReportMetric(float64(misses)/float64(b.N), "misses/op")
			})
		}
	}
}
