package redistier

import (
	"context"
	"crypto/rand"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"listingproxy/internal/testkit"
)

// leaseTier is a Tier on its own Redis client (closing it kills the
// "replica"), keys under p.
func leaseTier(t *testing.T, p string) (*Tier, *redis.Client) {
	t.Helper()
	addr := os.Getenv("LISTINGPROXY_TEST_REDIS_ADDR")
	if addr == "" {
		t.Skip("LISTINGPROXY_TEST_REDIS_ADDR is not set: set it to a Redis host:port (CI does) to run the shared-tier tests")
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	tier := New(rdb, Options{KeyPrefix: p, Timeout: time.Second})
	t.Cleanup(func() {
		tier.Close()
		rdb.Close()
	})
	return tier, rdb
}

// TestFeedLeaseOneHolder: of two replicas asking for one feed's lease one
// holds it; when the holder stops (its context ends) the other takes it
// at once; when a holder dies (its Redis client gone, nothing released)
// the other takes it once the lease expires; a holder whose lease another
// replica took over loses it.
func TestFeedLeaseOneHolder(t *testing.T) {
	p := "lptest:" + rand.Text()[:10] + ":"
	a, _ := leaseTier(t, p)
	b, rdbB := leaseTier(t, p)
	const ttl = 900 * time.Millisecond
	ctx := context.Background()

	actx, stopA := context.WithCancel(ctx)
	heldA, err := a.hold(actx, "feed:legacy:poll", ttl)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan context.Context, 1)
	bctx, stopB := context.WithCancel(ctx)
	defer stopB()
	go func() {
		held, err := b.hold(bctx, "feed:legacy:poll", ttl)
		if err == nil {
			got <- held
		}
	}()
	// B waits while A renews the lease through more than two of its
	// lifetimes (seen as its time to live going up six times).
	key := p + "feed:{feed:legacy:poll}"
	renewals, last := 0, time.Duration(0)
	testkit.WaitFor(t, "the holder to renew its lease six times", func() bool {
		select {
		case <-got:
			t.Fatal("both replicas hold the lease")
		case <-heldA.Done():
			t.Fatal("the holder lost its lease while renewing it")
		default:
		}
		pttl, err := a.rdb.PTTL(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if pttl > last {
			renewals++
		}
		last = pttl
		return renewals > 6
	})
	stopA() // A stops: it releases the lease
	heldB := <-got
	if heldB.Err() != nil {
		t.Fatal("B's lease ended at once")
	}

	// B dies: nothing released; A, asking again, gets the lease once it
	// expires.
	go func() {
		held, err := a.hold(ctx, "feed:legacy:poll", ttl)
		if err == nil {
			got <- held
		}
	}()
	rdbB.Close()
	testkit.WaitFor(t, "the dead holder's lease to end", func() bool { return heldB.Err() != nil })
	heldA = <-got

	// Another process overwrites the lease (an operator, a replica with a
	// clock gone wrong): A notices at its next renewal and lets go.
	c, _ := leaseTier(t, p)
	if err := c.rdb.Set(ctx, key, "someone-else", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the holder to notice its lease taken", func() bool { return heldA.Err() != nil })
}
