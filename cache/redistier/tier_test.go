package redistier_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"listingproxy/cache"
	"listingproxy/cache/redistier"
	"listingproxy/internal/testkit"
)

var pol = cache.Policy{
	TTL:                  time.Minute,
	StaleWhileRevalidate: 5 * time.Minute,
	StaleIfError:         time.Hour,
	NegativeTTL:          10 * time.Second,
}

var errBackend = errors.New("backend down")

// redisAddr is the test Redis, or skips the test.
func redisAddr(t testing.TB) string {
	t.Helper()
	addr := os.Getenv("LISTINGPROXY_TEST_REDIS_ADDR")
	if addr == "" {
		t.Skip("LISTINGPROXY_TEST_REDIS_ADDR is not set: set it to a Redis host:port (CI does) to run the shared-tier tests")
	}
	return addr
}

// client returns a client of addr closed at the end of the test.
func client(t *testing.T, addr string) redis.UniversalClient {
	t.Helper()
	rdb, err := redistier.Dial(redistier.ClientOptions{Addrs: []string{addr}, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// prefix is a key prefix of this test alone, its keys deleted at the end.
func prefix(t *testing.T, rdb redis.UniversalClient) string {
	p := "lptest:" + rand.Text()[:10] + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		keys, _ := rdb.Keys(ctx, p+"*").Result()
		if len(keys) > 0 {
			rdb.Del(ctx, keys...)
		}
	})
	return p
}

// replica is one process of a fleet: a Store over a Tier.
type replica struct {
	store *cache.Store
	tier  *redistier.Tier
}

// newReplica starts a replica on rdb with key prefix p and clock now (nil:
// time.Now), and waits for it to listen to the fleet.
func newReplica(t *testing.T, rdb redis.UniversalClient, p string, now func() time.Time, timeout time.Duration) *replica {
	t.Helper()
	return newReplicaWith(t, rdb, redistier.Options{KeyPrefix: p, Timeout: timeout}, now)
}

func newReplicaWith(t *testing.T, rdb redis.UniversalClient, o redistier.Options, now func() time.Time) *replica {
	t.Helper()
	tier := redistier.New(rdb, o)
	s, err := cache.New(cache.Options{MaxBytes: 8 << 20, Now: now, SecondTier: tier, Generations: tier})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		tier.Close()
	})
	select {
	case <-tier.Subscribed():
	case <-time.After(30 * time.Second):
		t.Fatal("the tier never subscribed")
	}
	return &replica{s, tier}
}

func fleet(t *testing.T, n int) ([]*replica, redis.UniversalClient, string) {
	rdb := client(t, redisAddr(t))
	p := prefix(t, rdb)
	rs := make([]*replica, n)
	for i := range rs {
		rs[i] = newReplica(t, rdb, p, nil, time.Second)
	}
	return rs, rdb, p
}

// loaderOf returns a loader answering body.
func loaderOf(body string) cache.Loader {
	return func(context.Context) (*cache.Entry, error) {
		return cache.NewEntry([]byte(body), "application/json", false, time.Now()), nil
	}
}

func failing(context.Context) (*cache.Entry, error) { return nil, errBackend }

var key = cache.Key{Tenant: "summit", Resource: "property", Scope: "full|au|json", Variant: "1001"}

// TestFleetFillsOnce: concurrent cold Gets for one key spread over three
// replicas cost one loader call; every caller gets its body.
func TestFleetFillsOnce(t *testing.T) {
	rs, _, _ := fleet(t, 3)
	const perReplica = 20
	var calls atomic.Int32
	release := make(chan struct{})
	load := func(context.Context) (*cache.Entry, error) {
		calls.Add(1)
		<-release
		return cache.NewEntry([]byte(`{"id":1001}`), "application/json", false, time.Now()), nil
	}
	type result struct {
		body string
		err  error
	}
	results := make(chan result, 3*perReplica)
	for _, r := range rs {
		for range perReplica {
			go func() {
				e, _, err := r.store.Get(context.Background(), key, pol, load)
				if err != nil {
					results <- result{err: err}
					return
				}
				results <- result{body: string(e.Body)}
			}()
		}
	}
	// Every Get has joined its replica's flight, one flight leads (the
	// loader runs) and the two others wait on its lease.
	testkit.WaitFor(t, "every Get to join a flight and two replicas to wait on the lease", func() bool {
		var waiters, leaseWaits uint64
		for _, r := range rs {
			waiters += r.store.Stats().Waiters
			leaseWaits += r.tier.Stats().LeaseWaits
		}
		return waiters == 3*(perReplica-1) && leaseWaits == 2 && calls.Load() == 1
	})
	close(release)
	for range 3 * perReplica {
		if r := <-results; r.err != nil || r.body != `{"id":1001}` {
			t.Errorf("Get = %q, %v", r.body, r.err)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("loader calls = %d, want 1 for the fleet", n)
	}
	var peer uint64
	for _, r := range rs {
		peer += r.tier.Stats().PeerFills
	}
	if peer != 2 {
		t.Errorf("peer fills = %d, want 2 (the replicas that waited)", peer)
	}
}

// TestSecondTierHitKeepsHeaders: a replica that never filled the key
// serves the other's entry: same body, gzip form, ETag, content type and
// stored-at, as a hit.
func TestSecondTierHitKeepsHeaders(t *testing.T) {
	rs, _, _ := fleet(t, 2)
	big := make([]byte, 4096)
	for i := range big {
		big[i] = 'a' + byte(i%7)
	}
	a, _, err := rs[0].store.Get(context.Background(), key, pol, loaderOf(string(big)))
	if err != nil {
		t.Fatal(err)
	}
	b, o, err := rs[1].store.Get(context.Background(), key, pol, failing)
	if err != nil || o != cache.Hit {
		t.Fatalf("other replica: %v, %v; want a hit", o, err)
	}
	type view struct {
		Body, Gzip, ETag, ContentType string
		StoredAt                      int64
		Negative                      bool
	}
	v := func(e *cache.Entry) view {
		return view{string(e.Body), string(e.Gzip), e.ETag, e.ContentType, e.StoredAt.UnixNano(), e.Negative}
	}
	if diff := cmp.Diff(v(a), v(b)); diff != "" {
		t.Errorf("entry through Redis differs (-filled +read):\n%s", diff)
	}
	if len(b.Gzip) == 0 {
		t.Error("the gzip form was not carried")
	}
}

// TestTenantsAndPermissionsNeverShare: through Redis, a key of another
// tenant or another permission set (scope) never reads this one's entry.
func TestTenantsAndPermissionsNeverShare(t *testing.T) {
	rs, _, _ := fleet(t, 2)
	if _, _, err := rs[0].store.Get(context.Background(), key, pol, loaderOf("summit full")); err != nil {
		t.Fatal(err)
	}
	others := []cache.Key{
		{Tenant: "harbour", Resource: key.Resource, Scope: key.Scope, Variant: key.Variant},
		{Tenant: key.Tenant, Resource: key.Resource, Scope: "prices|au|json", Variant: key.Variant},
		{Tenant: key.Tenant, Resource: key.Resource, Scope: "full|au|xml", Variant: key.Variant},
	}
	var got []string
	for _, k := range others {
		e, o, err := rs[1].store.Get(context.Background(), k, pol, loaderOf("own "+k.Tenant+" "+k.Scope))
		if err != nil || o != cache.Miss {
			t.Fatalf("%+v: %v, %v; want a miss and its own fill", k, o, err)
		}
		got = append(got, string(e.Body))
	}
	want := []string{"own harbour full|au|json", "own summit prices|au|json", "own summit full|au|xml"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("bodies (-want +got):\n%s", diff)
	}
}

// purgesSeen waits until every replica has received n purges.
// raceEnds lets a fill that raced a purge on rs[1] finish and checks that
// neither Redis nor any replica kept it: each refills with the loader's
// new body.
func raceEnds(t *testing.T, rs []*replica, k cache.Key, release chan struct{}, done chan error) {
	t.Helper()
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if e, _, err := rs[1].tier.Get(context.Background(), k); err != nil || e != nil {
		t.Errorf("Redis holds the fill that raced the purge (%v)", err)
	}
	purgesSeen(t, rs, 1)
	for i, r := range rs {
		e, _, err := r.store.Get(context.Background(), k, pol, loaderOf("after the purge"))
		if err != nil || string(e.Body) != "after the purge" {
			t.Errorf("replica %d after the purge: %q, %v", i, e.Body, err)
		}
	}
}

func purgesSeen(t *testing.T, rs []*replica, n uint64) {
	t.Helper()
	testkit.WaitFor(t, "the purge to reach every replica", func() bool {
		for _, r := range rs {
			if r.tier.Stats().PurgesReceived < n {
				return false
			}
		}
		return true
	})
}

// TestFleetPurge: a purge on one replica reaches every replica's first
// tier and the shared entries, by mode; other tenants keep theirs.
func TestFleetPurge(t *testing.T) {
	other := cache.Key{Tenant: "harbour", Resource: key.Resource, Scope: key.Scope, Variant: key.Variant}
	for _, mode := range []cache.PurgeMode{cache.Soft, cache.Hard} {
		t.Run(mode.String(), func(t *testing.T) {
			rs, _, _ := fleet(t, 3)
			for _, k := range []cache.Key{key, other} {
				if _, _, err := rs[0].store.Get(context.Background(), k, pol, loaderOf("old "+k.Tenant)); err != nil {
					t.Fatal(err)
				}
				for _, r := range rs[1:] {
					if _, o, err := r.store.Get(context.Background(), k, pol, failing); o != cache.Hit {
						t.Fatalf("warm-up: %v, %v", o, err)
					}
				}
			}
			if err := rs[1].store.PurgeContext(context.Background(), cache.Purge{Tenant: "summit", Mode: mode}); err != nil {
				t.Fatal(err)
			}
			purgesSeen(t, rs, 1)
			for i, r := range rs {
				e, o, err := r.store.Get(context.Background(), key, pol, failing)
				switch mode {
				case cache.Soft:
					if err != nil || o != cache.StaleIfError || string(e.Body) != "old summit" {
						t.Errorf("replica %d, soft purge, backend down: %v, %v; want the old body as stale-if-error", i, o, err)
					}
				case cache.Hard:
					if err == nil {
						t.Errorf("replica %d, hard purge, backend down: %v %q; want the error", i, o, e.Body)
					}
				}
				if _, o, _ := r.store.Get(context.Background(), other, pol, failing); o != cache.Hit {
					t.Errorf("replica %d: the other tenant's entry: %v, want hit", i, o)
				}
			}
			e, o, err := rs[2].store.Get(context.Background(), key, pol, loaderOf("new"))
			if err != nil || o != cache.Miss || string(e.Body) != "new" {
				t.Fatalf("after the purge, backend up: %v, %v", o, err)
			}
			if _, o, _ := rs[0].store.Get(context.Background(), key, pol, failing); o != cache.Hit {
				t.Errorf("the new fill did not reach replica 0 through Redis: %v", o)
			}
		})
	}
}

// TestPurgeRacingAFillOnAnotherReplica: a purge made on one replica while
// another fills keeps that fill out of Redis and of later requests.
func TestPurgeRacingAFillOnAnotherReplica(t *testing.T) {
	rs, _, _ := fleet(t, 2)
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, _, err := rs[0].store.Get(context.Background(), key, pol, func(context.Context) (*cache.Entry, error) {
			close(started)
			<-release
			return cache.NewEntry([]byte("before the purge"), "application/json", false, time.Now()), nil
		})
		done <- err
	}()
	<-started
	if err := rs[1].store.PurgeContext(context.Background(), cache.Purge{Tenant: "summit", Resource: "property", Mode: cache.Soft}); err != nil {
		t.Fatal(err)
	}
	raceEnds(t, rs, key, release, done)
}

// TestNewReplicaStartsWarm: with the backend down, a replica started after
// its siblings filled serves every key they hold, by the freshness ladder
// (fresh: hit; past TTL: stale-if-error).
func TestNewReplicaStartsWarm(t *testing.T) {
	rs, rdb, p := fleet(t, 2)
	keys := make([]cache.Key, 10)
	for i := range keys {
		keys[i] = cache.Key{Tenant: "summit", Resource: "property", Scope: key.Scope, Variant: strconv.Itoa(i)}
		if _, _, err := rs[i%2].store.Get(context.Background(), keys[i], pol, loaderOf("body "+strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name  string
		ahead time.Duration
		want  cache.Outcome
	}{
		{"fresh", 0, cache.Hit},
		{"past ttl", pol.TTL + pol.StaleWhileRevalidate + time.Minute, cache.StaleIfError},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fresh := newReplica(t, rdb, p, func() time.Time { return time.Now().Add(tt.ahead) }, time.Second)
			for i, k := range keys {
				e, o, err := fresh.store.Get(context.Background(), k, pol, failing)
				if err != nil || o != tt.want || string(e.Body) != "body "+strconv.Itoa(i) {
					t.Errorf("key %d on the new replica, backend down: %v, %v; want %v", i, o, err, tt.want)
				}
			}
		})
	}
}

// freePort returns a loopback port nobody listens on now.
func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startRedis starts a redis-server of this test on port, and returns
// its process.
func startRedis(t *testing.T, port int) *exec.Cmd {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed: the Redis-killed test needs its own server")
	}
	cmd := exec.Command(path, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port)})
	defer c.Close()
	testkit.WaitFor(t, "redis-server to answer", func() bool { return c.Ping(context.Background()).Err() == nil })
	return cmd
}

// TestRedisKilledUnderLoad: killing Redis while replicas serve fails no
// request; a restarted Redis is used again without a restart of the
// replicas.
func TestRedisKilledUnderLoad(t *testing.T) {
	redisAddr(t)
	port := freePort(t)
	srv := startRedis(t, port)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	rdb, err := redistier.Dial(redistier.ClientOptions{Addrs: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	p := "lptest:" + rand.Text()[:10] + ":"
	rs := []*replica{newReplica(t, rdb, p, nil, 0), newReplica(t, rdb, p, nil, 0)}

	var failed atomic.Int32
	var served atomic.Int64
	loop := func(from, to int) {
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for i := from + w; i < to; i += 8 {
					k := cache.Key{Tenant: "summit", Resource: "property", Scope: key.Scope, Variant: strconv.Itoa(i % 50)}
					if _, _, err := rs[i%2].store.Get(context.Background(), k, pol, loaderOf("b"+strconv.Itoa(i%50))); err != nil {
						failed.Add(1)
						t.Errorf("request %d: %v", i, err)
					}
					served.Add(1)
				}
			})
		}
		wg.Wait()
	}
	loop(0, 200)
	_ = srv.Process.Kill()
	_ = srv.Wait()
	loop(200, 600)                              // Redis gone
	rs[0].store.Purge("summit", "", cache.Soft) // applied locally while Redis is away
	loop(600, 800)
	if failed.Load() != 0 {
		t.Fatalf("%d of %d requests failed with Redis down", failed.Load(), served.Load())
	}
	if rs[0].tier.Stats().Errors == 0 {
		t.Fatal("no Redis errors counted: the test did not exercise a dead Redis")
	}
	startRedis(t, port)
	sets := rs[0].tier.Stats().Sets
	testkit.WaitFor(t, "a replica to write to the restarted Redis", func() bool {
		k := cache.Key{Tenant: "rejoin", Resource: "property", Variant: strconv.FormatInt(time.Now().UnixNano(), 10)}
		if _, _, err := rs[0].store.Get(context.Background(), k, pol, loaderOf("x")); err != nil {
			t.Errorf("Get while Redis comes back: %v", err)
		}
		return rs[0].tier.Stats().Sets > sets
	})
	if failed.Load() != 0 {
		t.Errorf("%d requests failed", failed.Load())
	}
}

// TestFillFailureReachesWaiters: when the replica that holds the lease
// fails to fill, the replicas waiting on it fail at once with its error
// (no backend call of their own), and the next request fills anew.
func TestFillFailureReachesWaiters(t *testing.T) {
	rs, _, _ := fleet(t, 2)
	var calls atomic.Int32
	release := make(chan struct{})
	load := func(context.Context) (*cache.Entry, error) {
		calls.Add(1)
		<-release
		return nil, errBackend
	}
	errs := make(chan error, 2)
	for _, r := range rs {
		go func() {
			_, _, err := r.store.Get(context.Background(), key, pol, load)
			errs <- err
		}()
	}
	testkit.WaitFor(t, "one replica to fill and the other to wait on its lease", func() bool {
		return calls.Load() == 1 && rs[0].tier.Stats().LeaseWaits+rs[1].tier.Stats().LeaseWaits == 1
	})
	close(release)
	for range rs {
		if err := <-errs; err == nil {
			t.Error("a Get succeeded; want the fill's failure on both replicas")
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("loader calls = %d, want 1", n)
	}
	if e, _, err := rs[1].store.Get(context.Background(), key, pol, loaderOf("later")); err != nil || string(e.Body) != "later" {
		t.Errorf("next Get = %v; want a new fill", err)
	}
}

// TestDeadFillerLeaseExpires: a lease whose holder never writes (it died)
// expires, and a waiting replica then fills the key itself.
func TestDeadFillerLeaseExpires(t *testing.T) {
	rdb := client(t, redisAddr(t))
	p := prefix(t, rdb)
	dead := redistier.New(rdb, redistier.Options{KeyPrefix: p, Lease: 300 * time.Millisecond})
	if e, _, err := dead.Claim(context.Background(), key); e != nil || err != nil {
		t.Fatalf("Claim on a cold key = %v, %v; want the lease", e, err)
	}
	// dead never Sets nor Abandons: it died holding the lease.
	r := newReplica(t, rdb, p, nil, time.Second)
	e, o, err := r.store.Get(context.Background(), key, pol, loaderOf("filled after the lease expired"))
	if err != nil || o != cache.Miss || string(e.Body) != "filled after the lease expired" {
		t.Fatalf("Get = %v, %v; want its own fill", o, err)
	}
	if w := r.tier.Stats().LeaseWaits; w < 1 {
		t.Errorf("lease waits = %d; want the Get to have waited on the dead filler's lease", w)
	}
}

// TestLeaseWaitersWakeWhenRedisDies: a replica waiting on another's fill
// lease does not sleep out the lease when Redis dies (the fill can no
// longer be announced): it loads the key itself.
func TestLeaseWaitersWakeWhenRedisDies(t *testing.T) {
	redisAddr(t)
	port := freePort(t)
	srv := startRedis(t, port)
	rdb, err := redistier.Dial(redistier.ClientOptions{Addrs: []string{fmt.Sprintf("127.0.0.1:%d", port)}})
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	p := "lptest:" + rand.Text()[:10] + ":"
	// The filler's lease outlasts the test: only Redis's death may end the wait.
	filler := newReplicaWith(t, rdb, redistier.Options{KeyPrefix: p, Lease: time.Hour}, nil)
	waiter := newReplica(t, rdb, p, nil, 0)
	long := pol
	long.FillTimeout = 10 * time.Minute // only Redis's death may end the wait

	started, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	go func() {
		_, _, _ = filler.store.Get(context.Background(), key, long, func(context.Context) (*cache.Entry, error) {
			close(started)
			<-release
			return nil, errBackend
		})
	}()
	<-started
	done := make(chan error, 1)
	go func() {
		e, _, err := waiter.store.Get(context.Background(), key, long, loaderOf("loaded alone"))
		if err == nil && string(e.Body) != "loaded alone" {
			err = fmt.Errorf("body %q", e.Body)
		}
		done <- err
	}()
	testkit.WaitFor(t, "the second replica to wait on the lease", func() bool { return waiter.tier.Stats().LeaseWaits == 1 })
	_ = srv.Process.Kill()
	_ = srv.Wait()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the waiting replica's Get: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the waiting replica still waits on the lease 30s after Redis died")
	}
}

// taggedLoader answers body carrying tags.
func taggedLoader(body string, tags ...cache.Tag) cache.Loader {
	return func(context.Context) (*cache.Entry, error) {
		e := cache.NewEntry([]byte(body), "application/json", false, time.Now())
		e.Tags = tags
		return e, nil
	}
}

// TestFleetPurgeTags: a purge by tags (an entity) made on one replica
// covers, on every replica and in Redis, exactly the bodies of its tenant
// that carry the tag, single and lists, every permission level, by mode; a
// list without it and another tenant's bodies with the same tag stay hits,
// and a replica started after the purge does not serve the purged bodies
// it reads from Redis.
func TestFleetPurgeTags(t *testing.T) {
	p1, p2, p3 := cache.IDTag("property", 1), cache.IDTag("property", 2), cache.IDTag("property", 3)
	type tk struct {
		k       cache.Key
		tags    []cache.Tag
		covered bool
	}
	keys := []tk{
		{cache.Key{Tenant: "summit", Resource: "property", Scope: "full|au|json", Variant: "1"}, []cache.Tag{p1}, true},
		{cache.Key{Tenant: "summit", Resource: "properties", Scope: "full|au|json", Variant: "status=current"}, []cache.Tag{p1, p2}, true},
		{cache.Key{Tenant: "summit", Resource: "properties", Scope: "basic|au|xml", Variant: "status=current"}, []cache.Tag{p1, p2}, true},
		{cache.Key{Tenant: "summit", Resource: "properties", Scope: "full|au|json", Variant: "status=sold"}, []cache.Tag{p2, p3}, false},
		{cache.Key{Tenant: "harbour", Resource: "property", Scope: "full|au|json", Variant: "1"}, []cache.Tag{p1}, false},
		{cache.Key{Tenant: "harbour", Resource: "properties", Scope: "full|au|json", Variant: "status=current"}, []cache.Tag{p1, p2}, false},
	}
	for _, mode := range []cache.PurgeMode{cache.Soft, cache.Hard} {
		t.Run(mode.String(), func(t *testing.T) {
			rs, rdb, p := fleet(t, 3)
			for _, c := range keys {
				if _, _, err := rs[0].store.Get(context.Background(), c.k, pol, taggedLoader("old", c.tags...)); err != nil {
					t.Fatal(err)
				}
				for _, r := range rs[1:] {
					if _, o, err := r.store.Get(context.Background(), c.k, pol, failing); o != cache.Hit {
						t.Fatalf("warm-up: %v, %v", o, err)
					}
				}
			}
			if err := rs[1].store.PurgeContext(context.Background(), cache.Purge{Tenant: "summit", Tags: []cache.Tag{p1}, Mode: mode}); err != nil {
				t.Fatal(err)
			}
			purgesSeen(t, rs, 1)
			late := newReplica(t, rdb, p, nil, time.Second)
			for i, r := range append(rs, late) {
				for _, c := range keys {
					e, o, err := r.store.Get(context.Background(), c.k, pol, failing)
					switch {
					case !c.covered:
						if o != cache.Hit || string(e.Body) != "old" {
							t.Errorf("replica %d, %v: %v, %v; want a hit (not covered)", i, c.k, o, err)
						}
					case mode == cache.Soft:
						if err != nil || o != cache.StaleIfError {
							t.Errorf("replica %d, %v: %v, %v; want the old body as stale-if-error", i, c.k, o, err)
						}
					default:
						if err == nil {
							t.Errorf("replica %d, %v: %v %q; want the error (hard purge)", i, c.k, o, e.Body)
						}
					}
				}
			}
			c := keys[1]
			if e, o, err := rs[2].store.Get(context.Background(), c.k, pol, taggedLoader("new", c.tags...)); err != nil || o != cache.Miss || string(e.Body) != "new" {
				t.Fatalf("after the purge, backend up: %v, %v", o, err)
			}
			if e, o, _ := rs[0].store.Get(context.Background(), c.k, pol, failing); o != cache.Hit || string(e.Body) != "new" {
				t.Errorf("the new fill did not reach replica 0 through Redis: %v", o)
			}
		})
	}
}

// TestPurgeTagsRacingAFillOnAnotherReplica: a purge by tags made on one
// replica while another fills a body carrying the tag keeps that fill out
// of Redis and of later requests (Covering answers for the tags).
func TestPurgeTagsRacingAFillOnAnotherReplica(t *testing.T) {
	rs, _, _ := fleet(t, 2)
	agent := cache.IDTag("agent", 42)
	list := cache.Key{Tenant: "summit", Resource: "agents", Scope: "full|au|json", Variant: "name=a"}
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, _, err := rs[0].store.Get(context.Background(), list, pol, func(context.Context) (*cache.Entry, error) {
			close(started)
			<-release
			e := cache.NewEntry([]byte("before the purge"), "application/json", false, time.Now())
			e.Tags = []cache.Tag{cache.IDTag("agent", 41), agent}
			return e, nil
		})
		done <- err
	}()
	<-started
	if err := rs[1].store.PurgeContext(context.Background(), cache.Purge{Tenant: "summit", Tags: []cache.Tag{agent}, Mode: cache.Soft}); err != nil {
		t.Fatal(err)
	}
	cov, err := rs[0].tier.Covering(context.Background(), list, []cache.Tag{cache.IDTag("agent", 41), agent})
	if err != nil || cov == 0 {
		t.Errorf("Covering with the purged tag = %d, %v; want the purge's epoch", cov, err)
	}
	if cov, _ := rs[0].tier.Covering(context.Background(), list, []cache.Tag{cache.IDTag("agent", 41)}); cov != 0 {
		t.Errorf("Covering without the purged tag = %d, want 0", cov)
	}
	other := cache.Key{Tenant: "harbour", Resource: list.Resource, Scope: list.Scope, Variant: list.Variant}
	if cov, _ := rs[0].tier.Covering(context.Background(), other, []cache.Tag{agent}); cov != 0 {
		t.Errorf("Covering of another tenant's body with the tag = %d, want 0", cov)
	}
	raceEnds(t, rs, list, release, done)
}
