package freshness_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"listingproxy/cache"
	"listingproxy/freshness"
	"listingproxy/internal/testkit"
	"listingproxy/proxy"
	"listingproxy/telemetry"
	"listingproxy/upstream"
)

var now = time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

func prop(id int64, street string) upstream.Property {
	return upstream.Property{ID: id, AgencyID: "A-" + street, LastUpdated: now.Add(-time.Hour), StreetName: street, Status: "CURRENT",
		Category: "Residential", PriceText: "$1", PriceFrom: ptr(650000.0), Agents: []upstream.AgentRef{{ID: 5, Name: "Jane Doe"}}}
}

// fixture is a proxy with a cache in front of a fake backend holding the
// same ids for two tenants (their backend tenants "hb" and "sm"), and a
// harbour tenant "harbour2" served from the same backend tenant as harbour.
type fixture struct {
	srv   *proxy.Server
	store *cache.Store
	fb    *testkit.Backend
}

const pw = "pw"

func newFixture(t *testing.T) *fixture {
	t.Helper()
	fb := &testkit.Backend{Properties: map[string][]upstream.Property{
		"hb/au": {prop(1, "Harbour St"), prop(2, "Quay Rd")},
		"sm/au": {prop(1, "Summit Ave"), prop(2, "Peak Rd")},
	}}
	store, err := cache.New(cache.Options{MaxBytes: 16 << 20, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	hash, _ := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
	users := []proxy.User{
		{Username: "harbour", PasswordHash: hash, Tenant: "harbour", Permissions: proxy.PermFull | proxy.PermPrices},
		{Username: "harbour-noprice", PasswordHash: hash, Tenant: "harbour", Permissions: proxy.PermFull},
		{Username: "harbour2", PasswordHash: hash, Tenant: "harbour2", Permissions: proxy.PermFull | proxy.PermPrices},
		{Username: "summit", PasswordHash: hash, Tenant: "summit", Permissions: proxy.PermFull | proxy.PermPrices},
	}
	srv, err := proxy.New(users, []proxy.Tenant{
		{Name: "harbour", Backend: fb, BackendName: "fake", Upstream: "hb"},
		{Name: "harbour2", Backend: fb, BackendName: "fake", Upstream: "hb"},
		{Name: "summit", Backend: fb, BackendName: "fake", Upstream: "sm"},
	}, proxy.Options{Cache: store, Now: func() time.Time { return now },
		Policy: func(string) cache.Policy {
			return cache.Policy{TTL: time.Hour, StaleIfError: time.Hour, NegativeTTL: time.Minute}
		}})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{srv: srv, store: store, fb: fb}
}

// status returns the Cache-Status and body of user's GET of target.
func (f *fixture) get(user, target string) (string, string) {
	r := httptest.NewRequest("GET", target, nil)
	r.Header.Set("Authorization", testkit.BasicAuth(user, pw))
	w := httptest.NewRecorder()
	f.srv.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		return "status " + w.Result().Status, w.Body.String()
	}
	return w.Header().Get("Cache-Status"), w.Body.String()
}

// feed is a ChangeFeed the test drives: each Watch publishes its sink and
// runs until its context ends.
type feed struct {
	name    string
	mu      sync.Mutex
	sink    upstream.ChangeSink
	watches chan context.Context // one per Watch started
}

func newFeed(name string) *feed { return &feed{name: name, watches: make(chan context.Context, 10)} }

func (f *feed) Name() string { return f.name }

func (f *feed) Watch(ctx context.Context, sink upstream.ChangeSink) error {
	f.mu.Lock()
	f.sink = sink
	f.mu.Unlock()
	f.watches <- ctx
	<-ctx.Done()
	return nil
}

// purges records the purge events.
type purges struct {
	mu  sync.Mutex
	got []telemetry.Purge
}

func (p *purges) add(e telemetry.Purge) { p.mu.Lock(); p.got = append(p.got, e); p.mu.Unlock() }

var tenants = map[string][]string{"hb": {"harbour", "harbour2"}, "sm": {"summit"}}

// TestChangesPurgeExactlyTheirEntities: a change of one property of one
// backend tenant purges that property's bodies (single and lists, every
// permission level) in each of our tenants served from it, and nothing of
// the other tenant holding the same id, nor the other property's single
// body; after the refill every user still gets its own body.
func TestChangesPurgeExactlyTheirEntities(t *testing.T) {
	f := newFixture(t)
	fd := newFeed("test")
	var ev purges
	stop := freshness.Start([]freshness.Feed{{Backend: "fake", Feed: fd, Tenants: tenants}},
		freshness.Options{Purger: f.store, Purged: ev.add})
	defer stop()
	<-fd.watches

	targets := []struct{ user, target string }{
		{"harbour", "/au/properties/1.json"}, {"harbour-noprice", "/au/properties/1.json"},
		{"harbour", "/au/properties/2.json"}, {"harbour", "/au/properties.json"},
		{"harbour2", "/au/properties/1.json"},
		{"summit", "/au/properties/1.json"}, {"summit", "/au/properties.json"},
	}
	before := map[string]string{}
	for _, tg := range targets {
		f.get(tg.user, tg.target)
		cs, body := f.get(tg.user, tg.target)
		if !strings.Contains(cs, "hit") {
			t.Fatalf("%s %s not warm: %s", tg.user, tg.target, cs)
		}
		before[tg.user+tg.target] = body
	}
	fd.sink.Changed(upstream.Change{Tenant: "hb", Resource: upstream.ResourceProperties, Op: upstream.OpUpdate, Properties: []int64{1}})
	want := map[string]bool{ // purged?
		"harbour/au/properties/1.json": true, "harbour-noprice/au/properties/1.json": true,
		"harbour/au/properties/2.json": false, "harbour/au/properties.json": true,
		"harbour2/au/properties/1.json": true,
		"summit/au/properties/1.json":   false, "summit/au/properties.json": false,
	}
	for _, tg := range targets {
		cs, body := f.get(tg.user, tg.target)
		purged := strings.Contains(cs, "miss")
		if purged != want[tg.user+tg.target] {
			t.Errorf("%s %s after the change: Cache-Status %q, want purged %v", tg.user, tg.target, cs, want[tg.user+tg.target])
		}
		if body != before[tg.user+tg.target] {
			t.Errorf("%s %s: the body changed though the backend did not: permission levels or tenants mixed", tg.user, tg.target)
		}
	}
	// The two permission levels of harbour never share a body.
	if _, full := f.get("harbour", "/au/properties/1.json"); !strings.Contains(full, "price_from") {
		t.Errorf("harbour's body lacks price_from: %s", full)
	} else if _, np := f.get("harbour-noprice", "/au/properties/1.json"); strings.Contains(np, "650000") {
		t.Errorf("harbour-noprice got raw prices after the purge: %s", np)
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if len(ev.got) != 2 || ev.got[0].Source != "test" || ev.got[0].Kind != "entity" || ev.got[0].Mode != "soft" {
		t.Errorf("purge events = %+v, want one soft entity purge per harbour tenant from source test", ev.got)
	}
}

// TestGapSoftPurgesEveryTenant: a gap of AllTenants soft-purges every
// tenant of the backend; while the backend fails the old bodies are still
// served (stale-if-error), which a hard purge would not allow.
func TestGapSoftPurgesEveryTenant(t *testing.T) {
	f := newFixture(t)
	fd := newFeed("test")
	stop := freshness.Start([]freshness.Feed{{Backend: "fake", Feed: fd, Tenants: tenants}}, freshness.Options{Purger: f.store})
	defer stop()
	<-fd.watches
	for _, u := range []string{"harbour", "summit"} {
		f.get(u, "/au/properties/2.json")
	}
	calls := f.fb.Calls()
	fd.sink.Changed(upstream.Change{Tenant: upstream.AllTenants, Gap: true})
	f.fb.Fail(context.DeadlineExceeded)
	for _, u := range []string{"harbour", "summit"} {
		if cs, _ := f.get(u, "/au/properties/2.json"); !strings.Contains(cs, "stale-if-error") {
			t.Errorf("%s after a gap with the backend failing: %q, want the stale body", u, cs)
		}
	}
	if f.fb.Calls() != calls+2 {
		t.Errorf("backend calls after the gap = %d, want %d (one refresh each)", f.fb.Calls(), calls+2)
	}
}

// lease is a fake fleet lease shared by the "replicas" of a test: one
// holder at a time; revoke ends the holder's context.
type lease struct {
	waiting atomic.Int32 // Holds blocked
	mu      sync.Mutex
	holder  chan struct{} // closed when the current holding ends
	free    chan struct{} // signalled when the lease is free
}

func newLease() *lease { l := &lease{free: make(chan struct{}, 1)}; l.free <- struct{}{}; return l }

func (l *lease) Hold(ctx context.Context, name string) (context.Context, error) {
	l.waiting.Add(1)
	defer l.waiting.Add(-1)
	select {
	case <-l.free:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	held, cancel := context.WithCancel(ctx)
	lost := make(chan struct{})
	l.mu.Lock()
	l.holder = lost
	l.mu.Unlock()
	go func() {
		select {
		case <-lost:
		case <-ctx.Done():
		}
		cancel()
		l.free <- struct{}{}
	}()
	return held, nil
}

// revoke takes the lease from its holder (its process died or stalled).
func (l *lease) revoke() {
	l.mu.Lock()
	close(l.holder)
	l.mu.Unlock()
}

// TestLeaseRunsOneFeedInTheFleet: two replicas with a shared lease run the
// feed one at a time. A holder that loses the lease stops its feed and the
// feed runs again under whoever takes the lease next; when the holder's
// process stops, the other replica takes the lease over and its feed
// starts.
func TestLeaseRunsOneFeedInTheFleet(t *testing.T) {
	l := newLease()
	a, b := newFeed("poll"), newFeed("poll")
	fa, fb := newFixture(t), newFixture(t)
	stopA := freshness.Start([]freshness.Feed{{Backend: "crm", Feed: a, Tenants: tenants}}, freshness.Options{Purger: fa.store, Lease: l})
	stopB := freshness.Start([]freshness.Feed{{Backend: "crm", Feed: b, Tenants: tenants}}, freshness.Options{Purger: fb.store, Lease: l})
	stops := map[*feed]func(){a: stopA, b: stopB}
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	// next returns the feed whose Watch started next, with its context.
	next := func() (*feed, context.Context) {
		select {
		case ctx := <-a.watches:
			return a, ctx
		case ctx := <-b.watches:
			return b, ctx
		}
	}
	noOtherWatch := func(what string) {
		t.Helper()
		testkit.WaitFor(t, "the other replica to wait for the lease", func() bool { return l.waiting.Load() == 1 })
		select {
		case <-a.watches:
			t.Fatalf("%s: a second feed runs while one holds the lease", what)
		case <-b.watches:
			t.Fatalf("%s: a second feed runs while one holds the lease", what)
		default:
		}
	}
	_, held := next()
	noOtherWatch("start")
	l.revoke()
	<-held.Done() // the holder stopped its feed
	holder, _ := next()
	noOtherWatch("after a revocation")
	stops[holder]()
	delete(stops, holder)
	if other, _ := next(); other == holder {
		t.Fatal("the stopped replica's feed ran again")
	}
}

// webhookish is a feed that runs on every replica.
type webhookish struct{ *feed }

func (webhookish) PerReplica() bool { return true }

// TestPerReplicaFeedsIgnoreTheLease: a feed whose input reaches one
// replica by itself runs everywhere, lease or not.
func TestPerReplicaFeedsIgnoreTheLease(t *testing.T) {
	l := newLease()
	a, b := webhookish{newFeed("webhook")}, webhookish{newFeed("webhook")}
	f := newFixture(t)
	stopA := freshness.Start([]freshness.Feed{{Backend: "crm", Feed: a, Tenants: tenants}}, freshness.Options{Purger: f.store, Lease: l})
	defer stopA()
	stopB := freshness.Start([]freshness.Feed{{Backend: "crm", Feed: b, Tenants: tenants}}, freshness.Options{Purger: f.store, Lease: l})
	defer stopB()
	<-a.watches
	<-b.watches
}
