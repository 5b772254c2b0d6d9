package redistier_test

import (
	"context"
	"testing"
	"time"

	"listingproxy/cache"
	"listingproxy/cache/redistier"
)

// BenchmarkSecondTierRead: one read of a 45 KB entry (body and gzip form)
// from Redis, as a first-tier miss does it: the round trip, the bound on
// its size, the checksum and the decoding.
func BenchmarkSecondTierRead(b *testing.B) {
	addr := redisAddr(b)
	rdb, err := redistier.Dial(redistier.ClientOptions{Addrs: []string{addr}, Timeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer rdb.Close()
	p := "lpbench:" + b.Name() + ":"
	tier := redistier.New(rdb, redistier.Options{KeyPrefix: p, Timeout: time.Second})
	ctx := context.Background()
	tier.Watch(func(cache.Purge) {})
	<-tier.Subscribed()
	defer tier.Close()
	e := cache.NewEntry([]byte(listing()), "application/json", false, time.Now())
	if got, _, err := tier.Claim(ctx, key); got != nil || err != nil {
		b.Fatalf("claim: %v, %v", got, err)
	}
	tier.Set(ctx, key, 1, e, time.Hour)
	defer func() {
		if keys, _ := rdb.Keys(ctx, p+"*").Result(); len(keys) > 0 {
			rdb.Del(ctx, keys...)
		}
	}()
	for b.Loop() {
		if got, _, err := tier.Get(ctx, key); got == nil || err != nil {
			b.Fatalf("get: %v, %v", got, err)
		}
	}
}
