package redistier_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"listingproxy/cache"
	"listingproxy/cache/redistier"
	"listingproxy/internal/testkit"
)

// delayProxy forwards TCP to addr, holding each chunk of Redis's answers
// for delay while slow is on: answers that arrive after a caller's wait
// but well within the operation's deadline, as on a machine whose
// goroutines are scheduled late.
type delayProxy struct {
	l     net.Listener
	slow  atomic.Bool
	delay time.Duration
	wg    sync.WaitGroup
}

func newDelayProxy(t *testing.T, addr string, delay time.Duration) *delayProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &delayProxy{l: l, delay: delay}
	var conns sync.Map
	p.wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			conns.Store(c, s)
			p.wg.Go(func() { _, _ = io.Copy(s, c); s.Close() })
			p.wg.Go(func() {
				defer c.Close()
				buf := make([]byte, 64<<10)
				for {
					n, err := s.Read(buf)
					if n > 0 && p.slow.Load() {
						// The delay is the fault injected (Redis answering late),
						// not a wait for a condition: the test's assertions hold
						// for any delay above the tier's timeout, and a loaded
						// machine only makes it longer.
						time.Sleep(p.delay)
					}
					if n > 0 {
						if _, werr := c.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			})
		}
	})
	t.Cleanup(func() {
		l.Close()
		conns.Range(func(c, s any) bool {
			c.(net.Conn).Close()
			s.(net.Conn).Close()
			return true
		})
		p.wg.Wait()
	})
	return p
}

// TestSlowAnswersAreNotFailures: with every answer of a healthy Redis
// arriving after cache.shared.timeout (20ms here) but long before the
// operation's deadline (1s), reads are misses to their callers (who load)
// but no failures: no errors, the breaker stays closed; a lease a late
// claim took is released; and a purge made then is recorded for the fleet
// without anyone retrying it.
func TestSlowAnswersAreNotFailures(t *testing.T) {
	addr := redisAddr(t)
	rdb := client(t, addr)
	p := prefix(t, rdb)
	other := newReplica(t, rdb, p, nil, time.Second)
	if _, _, err := other.store.Get(context.Background(), key, pol, loaderOf("in Redis")); err != nil {
		t.Fatal(err)
	}
	px := newDelayProxy(t, addr, 200*time.Millisecond)
	slowRdb, err := redistier.Dial(redistier.ClientOptions{Addrs: []string{px.l.Addr().String()}, Timeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = slowRdb.Close() })
	var gets, releases, failed atomic.Int32
	r := newReplicaWith(t, slowRdb, redistier.Options{KeyPrefix: p, Timeout: 20 * time.Millisecond, Observe: func(op string, _ time.Duration, err error) {
		switch op {
		case "get":
			gets.Add(1)
		case "abandon":
			releases.Add(1)
		}
		if err != nil {
			failed.Add(1)
		}
	}}, nil)
	px.slow.Store(true)
	const reads = 2 * redistier.DefaultBreakerFailures
	for i := range reads {
		if _, _, err := r.tier.Get(context.Background(), key); err == nil {
			t.Fatalf("read %d: no error; want the caller to stop waiting", i)
		}
	}
	// A claim answered late took a lease its caller no longer knows of
	// (it went on to load): the lease is released when the answer comes.
	cold := cache.Key{Tenant: "summit", Resource: "property", Scope: "full|au|json", Variant: "cold"}
	if e, _, err := r.tier.Claim(context.Background(), cold); e != nil || err != nil {
		t.Fatalf("slow claim: %v, %v; want nil, nil (load)", e, err)
	}
	testkit.WaitFor(t, "the late claim's lease to be released", func() bool { return releases.Load() == 1 })
	if n, err := rdb.Keys(context.Background(), p+"l:*").Result(); err != nil || len(n) != 0 {
		t.Errorf("leases left: %q, %v; want none", n, err)
	}
	if err := r.store.PurgeContext(context.Background(), cache.Purge{Tenant: "summit", Mode: cache.Hard}); err != nil && !errors.Is(err, cache.ErrPurgePending) {
		t.Fatalf("purge: %v; want it recorded, or pending", err)
	}
	testkit.WaitFor(t, "the purge to reach the other replica", func() bool { return other.tier.Stats().PurgesReceived >= 1 })
	testkit.WaitFor(t, "the slow operations to end", func() bool {
		return r.tier.Stats().PurgesPending == 0 && gets.Load() >= reads
	})
	st := r.tier.Stats()
	if st.Errors != 0 || failed.Load() != 0 || st.BreakerOpen || st.Slow < reads {
		t.Errorf("after %d slow answers: %d errors (%d observed), breaker open %t, %d slow; want no errors, closed, %d slow", reads, st.Errors, failed.Load(), st.BreakerOpen, st.Slow, reads)
	}
	if _, _, err := other.store.Get(context.Background(), key, pol, failing); err == nil {
		t.Error("the other replica still serves the hard-purged entry")
	}
}

// TestPendingPurgeRecordedWhenRedisReturns: a purge made while Redis is
// down is applied on its replica, answered as pending, and recorded for
// the fleet by the replica itself once Redis is back, with no one
// retrying it by hand; until then Stats.PurgesPending says so.
func TestPendingPurgeRecordedWhenRedisReturns(t *testing.T) {
	redisAddr(t)
	port, srv, rdb := ownRedis(t)
	var err error
	p := "lptest:pending:"
	r := newReplicaWith(t, rdb, redistier.Options{KeyPrefix: p}, nil)
	if _, _, err := r.store.Get(context.Background(), key, pol, loaderOf("old")); err != nil {
		t.Fatal(err)
	}
	_ = srv.Process.Kill()
	_ = srv.Wait()
	err = r.store.PurgeContext(context.Background(), cache.Purge{Tenant: "summit", Resource: "property", Mode: cache.Hard})
	if !errors.Is(err, cache.ErrPurgePending) {
		t.Fatalf("purge with Redis down: %v; want it pending", err)
	}
	if err := r.store.PurgeContext(context.Background(), cache.Purge{Tenant: "summit", Resource: "property", Mode: cache.Soft}); !errors.Is(err, cache.ErrPurgePending) {
		t.Fatalf("second purge with Redis down: %v; want it pending", err)
	}
	if _, _, err := r.store.Get(context.Background(), key, pol, failing); err == nil {
		t.Error("the replica that purged serves the hard-purged entry")
	}
	testkit.WaitFor(t, "both purges to be pending, merged into one", func() bool { return r.tier.Stats().PurgesPending == 1 })
	startRedis(t, port)
	testkit.WaitFor(t, "the pending purge to be recorded", func() bool { return r.tier.Stats().PurgesPending == 0 })
	rec, err := rdb.HGet(context.Background(), p+"{gens}", "r\x00summit\x00property").Result()
	if err != nil {
		t.Fatalf("no record of the purge in Redis once back: %v", err)
	}
	if f, h, ok := parse(rec); !ok || h == 0 || h != f {
		t.Errorf("record %q: want a hard purge (the harder of the two merged)", rec)
	}
	late := newReplica(t, rdb, p, nil, time.Second)
	if n := late.store.Stats().PurgesReceived; n < 1 {
		t.Errorf("a replica started after Redis came back received %d purges, want the recorded one", n)
	}
}

// A replica stopped (a deploy) while a purge is pending records it on its
// way out when Redis answers within Options.CloseFlush, and gives it up
// after CloseFlush when Redis stays away: Close never hangs on it.
func TestCloseRecordsPendingPurges(t *testing.T) {
	redisAddr(t)
	for _, back := range []bool{true, false} {
		t.Run(fmt.Sprintf("redis back %v", back), func(t *testing.T) {
			port, srv, rdb := ownRedis(t)
			var err error
			p := "lptest:closeflush:"
			// Back: as long as a loaded machine may need (Close returns
			// once recorded); away: short, since it is waited out.
			flush := 300 * time.Millisecond
			if back {
				flush = time.Minute
			}
			r := newReplicaWith(t, rdb, redistier.Options{KeyPrefix: p, CloseFlush: flush}, nil)
			redistier.HoldRetries(r.tier) // only Close may record it
			if _, _, err := r.store.Get(context.Background(), key, pol, loaderOf("old")); err != nil {
				t.Fatal(err)
			}
			_ = srv.Process.Kill()
			_ = srv.Wait()
			err = r.store.PurgeContext(context.Background(), cache.Purge{Tenant: "summit", Resource: "property", Mode: cache.Hard})
			if !errors.Is(err, cache.ErrPurgePending) {
				t.Fatalf("purge with Redis down: %v; want it pending", err)
			}
			if back {
				startRedis(t, port)
			}
			if n := r.tier.Stats().PurgesPending; n != 1 {
				t.Fatalf("pending before Close: %d, want 1 (the background retry is held)", n)
			}
			r.tier.Close()
			pending := r.tier.Stats().PurgesPending
			if !back {
				if pending != 1 {
					t.Errorf("pending after Close with Redis away: %d, want the purge still counted (given up, logged)", pending)
				}
				return
			}
			if pending != 0 {
				t.Errorf("pending after Close with Redis back: %d, want 0", pending)
			}
			rec, err := rdb.HGet(context.Background(), p+"{gens}", "r\x00summit\x00property").Result()
			if err != nil {
				t.Fatalf("Close did not record the pending purge: %v", err)
			}
			if f, h, ok := parse(rec); !ok || h == 0 || h != f {
				t.Errorf("record %q: want a hard purge", rec)
			}
		})
	}
}

// ownRedis starts a redis-server of the test's own on a free port (to kill
// and restart) and a client of it.
func ownRedis(t *testing.T) (port int, srv *exec.Cmd, rdb redis.UniversalClient) {
	t.Helper()
	port = freePort(t)
	srv = startRedis(t, port)
	rdb, err := redistier.Dial(redistier.ClientOptions{Addrs: []string{fmt.Sprintf("127.0.0.1:%d", port)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	return port, srv, rdb
}
