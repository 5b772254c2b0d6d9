package disktier_test

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"listingproxy/cache"
	"listingproxy/cache/disktier"
)

// benchEntry is a 45 KB list body with its gzip form, as the demo's full
// lists are.
func benchEntry() *cache.Entry {
	return cache.NewEntry([]byte(listing("bench")[:45_000]), "application/json", false, time.Now())
}

// BenchmarkWrite is the writer's cost of one 45 KB fill (encode, upsert,
// commit; one fill per transaction, the worst case: a busy writer batches
// several), off the client's path: Set returns at once.
func BenchmarkWrite(b *testing.B) {
	tier, err := disktier.Open(disktier.Options{Path: filepath.Join(b.TempDir(), "c.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer tier.Close()
	e := benchEntry()
	b.SetBytes(int64(len(e.Body) + len(e.Gzip)))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		tier.Set(context.Background(), cache.Key{Tenant: "harbour", Resource: "au/properties", Scope: "full|au|json", Variant: strconv.Itoa(i % 2000)}, 1, e, time.Hour)
		tier.Flush()
	}
}

// BenchmarkGet is a read on a first-tier miss: one 45 KB entry of 2,000
// found, checked and decoded.
func BenchmarkGet(b *testing.B) {
	tier, err := disktier.Open(disktier.Options{Path: filepath.Join(b.TempDir(), "c.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer tier.Close()
	e := benchEntry()
	key := func(i int) cache.Key {
		return cache.Key{Tenant: "harbour", Resource: "au/properties", Scope: "full|au|json", Variant: strconv.Itoa(i % 2000)}
	}
	for i := range 2000 {
		tier.Set(context.Background(), key(i), 1, e, time.Hour)
		if i%100 == 99 {
			tier.Flush() // within the queue's bound
		}
	}
	tier.Flush()
	b.SetBytes(int64(len(e.Body) + len(e.Gzip)))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		got, _, err := tier.Get(context.Background(), key(i))
		if err != nil || got == nil {
			b.Fatal(err)
		}
	}
}
