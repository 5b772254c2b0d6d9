package proxy_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"listingproxy/cache"
	"listingproxy/cache/redistier"
	"listingproxy/proxy"
)

// BenchmarkHitSharedTier compares a first-tier hit with the fleet's Redis
// tier configured against the same hit without it, in one run: each
// iteration serves a round of hits from each server in turn, and the
// reported tier/none is the median of the per-round time ratios (so load
// on the machine falls on both alike). A first-tier hit must never reach
// Redis, so the ratio should be 1 within noise (issue: within 5 %).
//
//	LISTINGPROXY_TEST_REDIS_ADDR=127.0.0.1:6379 go test -run '^$' -bench HitSharedTier -benchtime 2000x ./proxy
func BenchmarkHitSharedTier(b *testing.B) {
	addr := os.Getenv("LISTINGPROXY_TEST_REDIS_ADDR")
	if addr == "" {
		b.Skip("LISTINGPROXY_TEST_REDIS_ADDR is not set: no Redis to configure the shared tier on")
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	b.Cleanup(func() { rdb.Close() })
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		b.Skipf("Redis at %s does not answer: %v", addr, err)
	}
	prefix := fmt.Sprintf("lpbench:%d:", time.Now().UnixNano())
	b.Cleanup(func() {
		ctx := context.Background()
		if keys, _ := rdb.Keys(ctx, prefix+"*").Result(); len(keys) > 0 {
			rdb.Del(ctx, keys...)
		}
	})
	tier := redistier.New(rdb, redistier.Options{KeyPrefix: prefix})
	b.Cleanup(tier.Close)
	shared, err := cache.New(cache.Options{MaxBytes: 64 << 20, SecondTier: tier, Generations: tier})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(shared.Close)

	const round = 200
	for _, bc := range []struct {
		name, target string
		properties   int
	}{
		{"single-2KB", "/au/properties/100.xml", 1},
		{"list-40KB", "/au/properties.xml?detail=full&limit=50&status=current", 28},
	} {
		b.Run(bc.name, func(b *testing.B) {
			fb := benchBackend(bc.properties)
			servers := []*proxy.Server{
				newServer(b, fb, proxy.Options{Cache: newCache(b), Now: time.Now}),
				newServer(b, fb, proxy.Options{Cache: shared, Now: time.Now}),
			}
			r := httptest.NewRequest("GET", bc.target, nil)
			r.Header.Set("Authorization", basic("harbour"))
			w := &discardWriter{h: http.Header{}}
			for _, s := range servers {
				clear(w.h)
				s.ServeHTTP(w, r) // fill
				if w.code != 200 {
					b.Fatalf("status %d", w.code)
				}
			}
			calls := fb.Calls()
			var ratios []float64
			var spent [2]time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				var took [2]time.Duration
				for i, s := range servers {
					start := time.Now()
					for range round {
						clear(w.h)
						s.ServeHTTP(w, r)
					}
					took[i] = time.Since(start)
					spent[i] += took[i]
				}
				ratios = append(ratios, float64(took[1])/float64(took[0]))
			}
			b.StopTimer()
			if fb.Calls() != calls {
				b.Fatalf("%d backend calls during the hits: the entries were not held", fb.Calls()-calls)
			}
			slices.Sort(ratios)
			b.ReportMetric(ratios[len(ratios)/2], "tier/none")
			n := float64(b.N * round)
			b.ReportMetric(float64(spent[0].Nanoseconds())/n, "ns/hit-none")
			b.ReportMetric(float64(spent[1].Nanoseconds())/n, "ns/hit-tier")
		})
	}
}
