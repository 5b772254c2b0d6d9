package redistier

import (
	"context"
	crand "crypto/rand"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults of a feed lease (HoldOptions).
const (
	// DefaultFeedLeaseTTL is how long a feed lease lasts without being
	// renewed: the longest a feed stays unheld after its holder dies.
	DefaultFeedLeaseTTL = 5 * time.Second
)

// renewLease extends a lease only while it is still ours.
var renewLease = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0`)

// Hold makes this process the holder of the named lease (a change feed's:
// freshness.Lease), so that one replica of a fleet runs each feed. It
// waits until the lease is free, takes it (SET NX PX with a random token),
// and returns a context that ends when the lease is lost: a renewal,
// every third of DefaultFeedLeaseTTL, that finds another token or cannot
// reach Redis before the lease would expire. A holder that dies stops
// renewing, and another replica takes the lease within the TTL plus one
// try (a third of it, jittered). Its error is ctx's.
//
// Losing Redis loses the lease (the holder cannot prove it still holds
// it), so while Redis is down no replica runs the feed: changes are then
// seen when entries expire, and the feed that resumes reports a gap.
func (t *Tier) Hold(ctx context.Context, name string) (context.Context, error) {
	return t.hold(ctx, name, DefaultFeedLeaseTTL)
}

func (t *Tier) hold(ctx context.Context, name string, ttl time.Duration) (context.Context, error) {
	key := t.prefix + "feed:{" + name + "}"
	token := crand.Text()
	every := ttl / 3
	for {
		ok, err := t.rdb.SetNX(ctx, key, token, ttl).Result()
		if err == nil && ok {
			break
		}
		if err != nil && ctx.Err() == nil {
			t.log.Debug("redistier: feed lease: Redis did not answer", "lease", name, "error", err)
		}
		wait := every/2 + rand.N(every) // jittered: replicas do not retry in step
		tm := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			tm.Stop()
			return nil, ctx.Err()
		case <-tm.C:
		}
	}
	held, lose := context.WithCancel(ctx)
	go func() {
		defer lose()
		last := time.Now()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-held.Done():
				// Give the lease back at once if it is still ours, so another
				// replica need not wait out the TTL.
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), every)
				releaseLease.Run(rctx, t.rdb, []string{key}, token)
				cancel()
				return
			case <-tick.C:
			}
			rctx, cancel := context.WithTimeout(held, every)
			n, err := renewLease.Run(rctx, t.rdb, []string{key}, token, ttl.Milliseconds()).Int()
			cancel()
			switch {
			case err == nil && n == 1:
				last = time.Now()
			case err == nil || errors.Is(err, redis.Nil):
				t.log.Warn("redistier: feed lease taken by another replica", "lease", name)
				return
			case time.Since(last) >= ttl-every:
				t.log.Warn("redistier: feed lease lost: Redis does not answer", "lease", name, "error", err)
				return
			}
		}
	}()
	return held, nil
}

// releaseLease deletes a lease only while it is still ours.
var releaseLease = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("DEL", KEYS[1])
end
return 0`)
