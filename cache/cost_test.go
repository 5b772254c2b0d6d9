package cache_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"listingproxy/cache"
)

// TestMaxBytesBoundsTheHeap fills a store far past MaxBytes with entries
// of several sizes and checks that what it keeps alive on the heap stays
// close to MaxBytes: the process's memory limit is derived from it
// (cmd/listingproxy), so small entries, whose struct and bookkeeping
// outweigh their bodies, must be counted honestly. (Heap figures after a
// full collection; nothing else runs in this package's tests meanwhile.)
func TestMaxBytesBoundsTheHeap(t *testing.T) {
	const maxBytes = 4 << 20
	for _, size := range []int{64, 2000, 40000} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			var ms runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms)
			before := ms.HeapAlloc
			store, err := cache.New(cache.Options{MaxBytes: maxBytes})
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			body := make([]byte, size)
			for i := range body {
				body[i] = byte('a' + i*7%26)
			}
			for i := range 3 * maxBytes / (size + 200) {
				k := cache.Key{Tenant: "harbour", Resource: "au/properties", Scope: "full,prices|au|json", Variant: fmt.Sprintf("detail=full&limit=20&offset=%d", i)}
				_, _, err := store.Get(context.Background(), k, cache.Policy{TTL: time.Hour}, func(context.Context) (*cache.Entry, error) {
					e := cache.NewEntry(append([]byte(nil), body...), "application/json; charset=utf-8", false, time.Now())
					e.Meta = &[5][]string{{"a"}, {"b"}, {"c"}, {"d"}, {"e"}} // as the proxy's precomputed headers
					return e, nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			// Two collections: the gzip writers NewEntry recycles (a sync.Pool,
			// ~800 KB each, process-wide rather than the store's) survive one.
			runtime.GC()
			runtime.GC()
			runtime.ReadMemStats(&ms)
			grew := int64(ms.HeapAlloc) - int64(before)
			t.Logf("%d-byte bodies: the heap grew by %.2f MiB for MaxBytes %d MiB", size, float64(grew)/(1<<20), maxBytes>>20)
			if limit := int64(maxBytes) * 115 / 100; grew > limit {
				t.Errorf("%d-byte bodies: the heap grew by %.2f MiB for MaxBytes %d MiB, want at most %.2f MiB (stats %+v)",
					size, float64(grew)/(1<<20), maxBytes>>20, float64(limit)/(1<<20), store.Stats())
			}
			runtime.KeepAlive(store)
		})
	}
}
