package redistier_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"listingproxy/cache"
	"listingproxy/cache/redistier"
	"listingproxy/internal/testkit"
)

// writeTagRecords writes n records of purges by tags of tenant straight
// into the tags hash and its expiry set, pipelined in batches: the state a
// purge-heavy fleet leaves in Redis.
func writeTagRecords(t *testing.T, rdb redis.UniversalClient, p, tenant string, n int) {
	t.Helper()
	ctx := context.Background()
	deadline := float64(time.Now().Add(time.Hour).UnixMilli())
	const batch = 10_000
	for start := 0; start < n; start += batch {
		fields := make([]any, 0, 2*batch)
		members := make([]redis.Z, 0, batch)
		for i := start; i < min(start+batch, n); i++ {
			f := tenant + "\x00" + strconv.FormatUint(uint64(1_000_000+i), 16)
			fields = append(fields, f, "1:0")
			members = append(members, redis.Z{Score: deadline, Member: f})
		}
		if _, err := rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
			pl.HSet(ctx, p+"{gens}:tags", fields...)
			pl.ZAdd(ctx, p+"{gens}:tags:exp", members...)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestResyncWithManyPurgeRecords: a replica that starts while Redis holds
// 200,000 records of purges by tags reads them all (page by page, each
// within the production client's 50ms bound) and never serves an entry a
// hard purge among them covers; until its sync ends it serves nothing from
// Redis, and the Stats say so.
func TestResyncWithManyPurgeRecords(t *testing.T) {
	addr := redisAddr(t)
	rdb := client(t, addr)
	p := prefix(t, rdb)
	filler := newReplicaWith(t, rdb, redistier.Options{KeyPrefix: p, Timeout: time.Second, MaxRecords: 1_000_000}, nil)

	purged := cache.IDTag("property", 7)
	hidden := cache.Key{Tenant: "summit", Resource: "property", Scope: "full|au|json", Variant: "7"}
	kept := cache.Key{Tenant: "harbour", Resource: "property", Scope: "full|au|json", Variant: "7"}
	for _, k := range []cache.Key{key, hidden, kept} {
		if _, _, err := filler.store.Get(context.Background(), k, pol, taggedLoader("old "+k.Tenant, purged)); err != nil {
			t.Fatal(err)
		}
	}
	writeTagRecords(t, rdb, p, "bulk", 200_000)
	if err := filler.store.PurgeContext(context.Background(), cache.Purge{Tenant: "summit", Tags: []cache.Tag{purged}, Mode: cache.Hard}); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.HLen(context.Background(), p+"{gens}:tags").Result(); n < 200_000 {
		t.Fatalf("the tags hash holds %d records, want over 200,000", n)
	}

	// The production client: the default 50ms bound on every read.
	prod, err := redistier.Dial(redistier.ClientOptions{Addrs: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = prod.Close() })
	tier := redistier.New(prod, redistier.Options{KeyPrefix: p})
	s, err := cache.New(cache.Options{MaxBytes: 8 << 20, SecondTier: tier, Generations: tier})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		tier.Close()
	})
	// Before its sync has read the records, the replica does not use
	// Redis's entries: the Get loads.
	if !tier.Stats().Synced {
		var calls atomic.Int32
		e, o, err := s.Get(context.Background(), key, pol, func(ctx context.Context) (*cache.Entry, error) {
			calls.Add(1)
			return taggedLoader("loaded", purged)(ctx)
		})
		if tier.Stats().Synced && calls.Load() == 0 {
			t.Log("the sync ended before the read: nothing to check before it")
		} else if err != nil || o != cache.Miss || string(e.Body) != "loaded" || calls.Load() != 1 {
			t.Errorf("before the sync: %v %q, %v, %d loader calls; want a miss and the loader's body", o, e.Body, err, calls.Load())
		}
	}
	select {
	case <-tier.Subscribed():
	case <-time.After(60 * time.Second):
		t.Fatalf("the replica never read the fleet's purges (stats %+v)", tier.Stats())
	}
	if !tier.Stats().Synced {
		t.Error("Stats().Synced is false after the first sync")
	}
	if e, o, err := s.Get(context.Background(), hidden, pol, failing); err == nil {
		t.Errorf("the hard-purged entry: %v %q; want the error (hard purge)", o, e.Body)
	}
	if e, o, err := s.Get(context.Background(), kept, pol, failing); err != nil || o != cache.Hit || string(e.Body) != "old harbour" {
		t.Errorf("another tenant's entry with the same tag: %v, %v; want a hit", o, err)
	}
	testkit.WaitFor(t, "the records to reach the store", func() bool {
		return s.Stats().PurgesReceived >= 200_001
	})
}

// TestPurgeRecordsBoundedInRedis: past Options.MaxRecords, the records of
// purges by tags closest to expiry are folded into purges of their tenant
// in Redis; a replica started later hides its tenant's entries filled
// before them, and other tenants' entries stay.
func TestPurgeRecordsBoundedInRedis(t *testing.T) {
	rdb := client(t, redisAddr(t))
	p := prefix(t, rdb)
	o := redistier.Options{KeyPrefix: p, Timeout: time.Second, MaxRecords: 100}
	r := newReplicaWith(t, rdb, o, nil)
	first := cache.IDTag("property", 1)
	summit := cache.Key{Tenant: "summit", Resource: "property", Scope: "full|au|json", Variant: "1"}
	harbour := cache.Key{Tenant: "harbour", Resource: "property", Scope: "full|au|json", Variant: "1"}
	for _, k := range []cache.Key{summit, harbour} {
		if _, _, err := r.store.Get(context.Background(), k, pol, taggedLoader("old "+k.Tenant, first)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		tags := make([]cache.Tag, 50)
		for j := range tags {
			tags[j] = cache.IDTag("property", int64(1+50*i+j))
		}
		if err := r.store.PurgeContext(context.Background(), cache.Purge{Tenant: "summit", Tags: tags, Mode: cache.Hard}); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	if n, _ := rdb.HLen(ctx, p+"{gens}:tags").Result(); n > 100 {
		t.Errorf("tags hash: %d records, want at most 100", n)
	}
	if n, _ := rdb.ZCard(ctx, p+"{gens}:tags:exp").Result(); n > 100 {
		t.Errorf("expiry set: %d members, want at most 100", n)
	}
	if rec, err := rdb.HGet(ctx, p+"{gens}", "t\x00summit").Result(); err != nil {
		t.Errorf("no tenant record for the folded records: %v", err)
	} else if _, hard, _ := parse(rec); hard == 0 {
		t.Errorf("tenant record %q: the folded hard purges are not hard", rec)
	}
	late := newReplicaWith(t, rdb, o, nil)
	if e, o, err := late.store.Get(ctx, summit, pol, failing); err == nil {
		t.Errorf("a later replica served an entry a folded hard purge covers: %v %q", o, e.Body)
	}
	if e, o, err := late.store.Get(ctx, harbour, pol, failing); err != nil || o != cache.Hit || string(e.Body) != "old harbour" {
		t.Errorf("another tenant's entry: %v, %v; want a hit", o, err)
	}
}

// parse reads a record "FILL:HARD".
func parse(rec string) (fill, hard uint64, ok bool) {
	for i := range len(rec) {
		if rec[i] == ':' {
			f, err1 := strconv.ParseUint(rec[:i], 10, 64)
			h, err2 := strconv.ParseUint(rec[i+1:], 10, 64)
			return f, h, err1 == nil && err2 == nil
		}
	}
	return 0, 0, false
}
