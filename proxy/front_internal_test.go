package proxy

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"listingproxy/cache"
)

// TestFrontMemoCost: frontCost does not underestimate what an entry holds
// on the heap beyond the cache's own item (its key, its value, the map and
// ring slots, the Hint's record, the copied target), so frontBytes bounds
// the front memo's share of the memory limit. Heap sizes are read after a
// collection; nothing here is timed.
func TestFrontMemoCost(t *testing.T) {
	const n = 5000
	c, err := cache.New(cache.Options{MaxBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p := cache.Policy{TTL: time.Hour}
	keys := make([]cache.Key, n)
	for i := range keys {
		keys[i] = cache.Key{Tenant: "harbour", Resource: resProperties, Scope: "full|au|xml", Variant: fmt.Sprintf("limit=1|offset=%d", i)}
		if _, _, err := c.Get(context.Background(), keys[i], p, func(context.Context) (*cache.Entry, error) {
			return cache.NewEntry([]byte("body"), "application/xml", false, time.Now()), nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	c.Wait()
	who, st := &principal{}, &settings{}
	checkHeldCost(t, n, newFrontMemo, func(m *frontMemo, i int) int {
		k := keys[i]
		_, _, _, h, ok := c.FreshHashedHint(k, c.VariantHash(k.Variant), p)
		if !ok || h == (cache.Hint{}) {
			t.Fatalf("%v: no fresh entry with a Hint", k)
		}
		fk := frontKey{who, strings.Clone(fmt.Sprintf("/au/properties.xml?limit=1&offset=%d", i))}
		fh := frontHit{st: st, hint: h, policy: p}
		m.set(fk, fh)
		return frontCost(fk, fh)
	})
}
