package redistier_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"listingproxy/cache"
	"listingproxy/cache/redistier"
	"listingproxy/internal/testkit"
)

// failSets is a go-redis hook that, while on, fails the tier's write of
// an entry (a transaction that SETs an entry's key) as a Redis fault
// would, and lets everything else through.
type failSets struct{ on atomic.Bool }

func (f *failSets) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f *failSets) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (f *failSets) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if f.on.Load() {
			for _, cmd := range cmds {
				if a := cmd.Args(); cmd.Name() == "set" && len(a) > 1 && strings.Contains(fmt.Sprint(a[1]), "e:{") {
					err := errors.New("injected fault: connection reset")
					for _, c := range cmds {
						c.SetErr(err)
					}
					return err
				}
			}
		}
		return next(ctx, cmds)
	}
}

var _ redis.Hook = (*failSets)(nil)

// waitingFill starts a Get of key on waiter while filler fills it with a
// loader that blocks until release is closed, and returns once the waiter
// waits on the filler's lease; the Get's result arrives on done.
func waitingFill(t *testing.T, filler, waiter *replica, release chan struct{}, fillerDone chan error) (done chan string, waiterCalls *atomic.Int32) {
	t.Helper()
	started := make(chan struct{})
	go func() {
		_, _, err := filler.store.Get(context.Background(), key, pol, func(context.Context) (*cache.Entry, error) {
			close(started)
			<-release
			return cache.NewEntry([]byte("the filler's"), "application/json", false, time.Now()), nil
		})
		fillerDone <- err
	}()
	<-started
	waiterCalls = new(atomic.Int32)
	done = make(chan string, 1)
	go func() {
		e, _, err := waiter.store.Get(context.Background(), key, pol, func(ctx context.Context) (*cache.Entry, error) {
			waiterCalls.Add(1)
			return loaderOf("the waiter's")(ctx)
		})
		if err != nil {
			done <- "error: " + err.Error()
			return
		}
		done <- string(e.Body)
	}()
	testkit.WaitFor(t, "the waiter to wait on the filler's lease", func() bool { return waiter.tier.Stats().LeaseWaits == 1 })
	return done, waiterCalls
}

// TestFailedSetReleasesLease: a filler whose write-through fails releases
// its lease at once and wakes the replica waiting on it, which loads the
// key itself, long before the lease (ten minutes here) would expire.
func TestFailedSetReleasesLease(t *testing.T) {
	addr := redisAddr(t)
	rdb := client(t, addr)
	p := prefix(t, rdb)
	faulty := client(t, addr)
	hook := &failSets{}
	faulty.AddHook(hook)
	o := redistier.Options{KeyPrefix: p, Timeout: time.Second, Lease: 10 * time.Minute}
	filler := newReplicaWith(t, faulty, o, nil)
	waiter := newReplicaWith(t, rdb, o, nil)
	release, fillerDone := make(chan struct{}), make(chan error, 1)
	done, calls := waitingFill(t, filler, waiter, release, fillerDone)
	hook.on.Store(true)
	close(release)
	if err := <-fillerDone; err != nil {
		t.Fatalf("the filler's Get: %v", err)
	}
	select {
	case body := <-done:
		if body != "the waiter's" || calls.Load() != 1 {
			t.Errorf("the waiter: %q after %d loader calls; want its own fill", body, calls.Load())
		}
	case <-time.After(time.Minute):
		t.Fatal("the waiter still waits a minute after the filler's write failed (its lease lasts ten)")
	}
	if n, _ := rdb.Exists(context.Background(), strings.Replace(entryKeyOf(t, rdb, p), "e:{", "l:{", 1)).Result(); n != 0 {
		t.Error("a lease is still held after both fills ended")
	}
}

// TestWaiterRechecksLease: a lease that disappears without a note (its
// holder's release lost, or deleted by hand) is claimed by the waiting
// replica at its next re-check, not at the lease's expiry.
func TestWaiterRechecksLease(t *testing.T) {
	rdb := client(t, redisAddr(t))
	p := prefix(t, rdb)
	o := redistier.Options{KeyPrefix: p, Timeout: time.Second, Lease: 10 * time.Minute}
	filler := newReplicaWith(t, rdb, o, nil)
	waiter := newReplicaWith(t, rdb, o, nil)
	release, fillerDone := make(chan struct{}), make(chan error, 1)
	defer func() {
		close(release)
		<-fillerDone
	}()
	done, calls := waitingFill(t, filler, waiter, release, fillerDone)
	leases, err := rdb.Keys(context.Background(), p+"l:*").Result()
	if err != nil || len(leases) != 1 {
		t.Fatalf("leases: %q, %v; want one", leases, err)
	}
	if err := rdb.Del(context.Background(), leases[0]).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case body := <-done:
		if body != "the waiter's" || calls.Load() != 1 {
			t.Errorf("the waiter: %q after %d loader calls; want its own fill", body, calls.Load())
		}
	case <-time.After(time.Minute):
		t.Fatal("the waiter still waits a minute after the lease it waits on was deleted (it lasts ten)")
	}
}
