package cache

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// memTier is a SecondTier in memory, shared by the Stores of one test (the
// processes of a fleet). It does not coordinate fills: Claim always says
// "load" (cache/redistier's tests cover leases against a real Redis).
type memTier struct {
	mu   sync.Mutex
	m    map[Key]memEntry
	gets int
}

type memEntry struct {
	e   *Entry
	gen uint64
}

func newMemTier() *memTier { return &memTier{m: map[Key]memEntry{}} }

func (t *memTier) Get(_ context.Context, k Key) (*Entry, uint64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.gets++
	v, ok := t.m[k]
	if !ok {
		return nil, 0, nil
	}
	c := *v.e // as a shared store would: an Entry of its own
	return &c, v.gen, nil
}

func (t *memTier) Claim(context.Context, Key) (*Entry, uint64, error) { return nil, 0, nil }

func (t *memTier) Set(_ context.Context, k Key, gen uint64, e *Entry, _ time.Duration) {
	t.mu.Lock()
	t.m[k] = memEntry{e, gen}
	t.mu.Unlock()
}

func (t *memTier) Abandon(context.Context, Key, error) {}

// memGenerations is a Generations in memory shared by a test's Stores. It
// delivers each purge to every watcher at once, unless held: then
// deliveries queue until release.
type memGenerations struct {
	mu       sync.Mutex
	epoch    uint64
	log      []Purge
	watchers []func(Purge)
	held     bool
	queue    []Purge
}

func (g *memGenerations) Purge(_ context.Context, p Purge, after uint64) (uint64, error) {
	g.mu.Lock()
	g.epoch = max(g.epoch, after) + 1
	p.Epoch = g.epoch
	g.log = append(g.log, p)
	ws := g.watchers
	if g.held {
		g.queue = append(g.queue, p)
		ws = nil
	}
	g.mu.Unlock()
	for _, w := range ws {
		w(p)
	}
	return p.Epoch, nil
}

func (g *memGenerations) Watch(apply func(Purge)) {
	g.mu.Lock()
	g.watchers = append(g.watchers, apply)
	log := g.log
	g.mu.Unlock()
	for _, p := range log {
		apply(p)
	}
}

func (g *memGenerations) Covering(_ context.Context, k Key, tags []Tag) (uint64, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var cov uint64
	for _, p := range g.log {
		switch {
		case p.All || p.Tenant != k.Tenant:
			if p.All {
				cov = max(cov, p.Epoch)
			}
		case len(p.Tags) > 0:
			for _, t := range p.Tags {
				if slices.Contains(tags, t) {
					cov = max(cov, p.Epoch)
				}
			}
		case p.Resource == "" || p.Resource == k.Resource:
			cov = max(cov, p.Epoch)
		}
	}
	return cov, nil
}

func (g *memGenerations) release() {
	g.mu.Lock()
	q, ws := g.queue, g.watchers
	g.queue, g.held = nil, false
	g.mu.Unlock()
	for _, p := range q {
		for _, w := range ws {
			w(p)
		}
	}
}

// fleet returns n Stores sharing one clock, second tier and generations.
func fleet(t *testing.T, n int) ([]*Store, *fakeClock, *memTier, *memGenerations) {
	clock, tier, gens := newClock(), newMemTier(), &memGenerations{}
	stores := make([]*Store, n)
	for i := range stores {
		stores[i] = newStore(t, Options{Now: clock.Now, SecondTier: tier, Generations: gens, Adopt: func(e *Entry) { e.Meta = "adopted" }})
	}
	return stores, clock, tier, gens
}

// mustNotLoad is a loader for a Get that must be answered without one.
func mustNotLoad(t *testing.T) Loader {
	return func(context.Context) (*Entry, error) {
		t.Error("loader called; want an answer from the second tier")
		return nil, errBackend
	}
}

func TestSecondTierServesOtherStoresFills(t *testing.T) {
	s, clock, tier, _ := fleet(t, 2)
	k := Key{Tenant: "acme", Resource: "property", Variant: "1"}
	l := newLoader(clock)
	a, _, err := s[0].Get(context.Background(), k, pol, l.load)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(pol.TTL / 2)
	b, o, err := s[1].Get(context.Background(), k, pol, mustNotLoad(t))
	if err != nil || o != Hit || b.ETag != a.ETag || !b.StoredAt.Equal(a.StoredAt) || body(b) != body(a) {
		t.Fatalf("second store's Get = %q, %v, %v; want the first store's entry as a hit", body(b), o, err)
	}
	if b.Meta != "adopted" || a.Meta != nil {
		t.Errorf("Meta: read %v, filled %v; want Options.Adopt applied to the entry read only", b.Meta, a.Meta)
	}
	gets := tier.gets
	if _, o, _ := s[1].Get(context.Background(), k, pol, mustNotLoad(t)); o != Hit || tier.gets != gets {
		t.Errorf("next Get = %v with %d second-tier reads; want a first-tier hit, no read", o, tier.gets-gets)
	}
	if st := s[1].Stats(); st.SecondTierHits != 1 || st.LoaderCalls != 0 {
		t.Errorf("stats: SecondTierHits %d, LoaderCalls %d; want 1, 0", st.SecondTierHits, st.LoaderCalls)
	}
}

// TestSecondTierFreshnessLadder: an entry another Store filled is served
// by its age as the first tier would serve it.
func TestSecondTierFreshnessLadder(t *testing.T) {
	tests := []struct {
		name     string
		age      time.Duration
		fail     bool
		wantBody string
		wantO    Outcome
		wantErr  bool
	}{
		{"fresh", pol.TTL - time.Second, true, "v1", Hit, false},
		{"stale while revalidate", pol.TTL + time.Second, true, "v1", Stale, false},
		{"stale if error", pol.TTL + pol.StaleWhileRevalidate + time.Second, true, "v1", StaleIfError, false},
		{"past stale if error", pol.TTL + pol.StaleIfError + time.Second, true, "", Miss, true},
		{"past stale while revalidate, backend up", pol.TTL + pol.StaleWhileRevalidate + time.Second, false, "fresh", Miss, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, clock, _, _ := fleet(t, 2)
			k := Key{Tenant: "acme", Resource: "property", Variant: "1"}
			if _, _, err := s[0].Get(context.Background(), k, pol, newLoader(clock).load); err != nil {
				t.Fatal(err)
			}
			clock.Advance(tt.age)
			load := func(context.Context) (*Entry, error) {
				if tt.fail {
					return nil, errBackend
				}
				return NewEntry([]byte("fresh"), "text/plain", false, clock.Now()), nil
			}
			e, o, err := s[1].Get(context.Background(), k, pol, load)
			if (err != nil) != tt.wantErr || o != tt.wantO || (e != nil && body(e) != tt.wantBody) {
				t.Errorf("Get = %q, %v, %v; want %q, %v, error %v", body(e), o, err, tt.wantBody, tt.wantO, tt.wantErr)
			}
			s[1].Wait()
		})
	}
}

// TestPurgeReachesEveryStore: a purge on one Store hides the entry every
// Store holds (first tier and second), by mode.
func TestPurgeReachesEveryStore(t *testing.T) {
	for _, mode := range []PurgeMode{Soft, Hard} {
		t.Run(mode.String(), func(t *testing.T) {
			s, clock, _, _ := fleet(t, 2)
			k := Key{Tenant: "acme", Resource: "property", Variant: "1"}
			other := Key{Tenant: "zenith", Resource: "property", Variant: "1"}
			for _, key := range []Key{k, other} {
				if _, _, err := s[0].Get(context.Background(), key, pol, newLoader(clock).load); err != nil {
					t.Fatal(err)
				}
				if _, o, _ := s[1].Get(context.Background(), key, pol, mustNotLoad(t)); o != Hit {
					t.Fatalf("warm-up on the second store: %v, want hit", o)
				}
			}
			s[0].Purge("acme", "", mode)
			for i, st := range s {
				_, _, err := st.Get(context.Background(), k, pol, func(context.Context) (*Entry, error) { return nil, errBackend })
				if wantStale := mode == Soft; (err == nil) != wantStale {
					t.Errorf("store %d after a %s purge, backend down: err %v, want stale served %v", i, mode, err, wantStale)
				}
				if _, o, _ := st.Get(context.Background(), other, pol, mustNotLoad(t)); o != Hit {
					t.Errorf("store %d: another tenant's entry: %v, want hit", i, o)
				}
			}
			if got := s[1].Stats().PurgesReceived; got != 1 {
				t.Errorf("PurgesReceived on the other store = %d, want 1", got)
			}
		})
	}
}

// TestPurgeRacingAFillElsewhere: a purge recorded by another Store while a
// fill runs, not yet delivered here, keeps the fill out of both tiers.
func TestPurgeRacingAFillElsewhere(t *testing.T) {
	s, clock, tier, gens := fleet(t, 2)
	k := Key{Tenant: "acme", Resource: "property", Variant: "1"}
	l := newLoader(clock).gated()
	done := make(chan result, 1)
	go func() {
		e, o, err := s[0].Get(context.Background(), k, pol, l.load)
		done <- result{e, o, err}
	}()
	<-l.started
	gens.mu.Lock()
	gens.held = true
	gens.mu.Unlock()
	s[1].Purge("acme", "property", Soft)
	close(l.gate)
	if r := <-done; r.err != nil || body(r.e) != "v1" {
		t.Fatalf("the Get that predates the purge = %q, %v; want its fill's body", body(r.e), r.err)
	}
	gens.release()
	if e, _, _ := tier.Get(context.Background(), k); e != nil {
		t.Errorf("second tier holds the pre-purge fill %q", body(e))
	}
	if got := s[0].Stats().PurgedFills; got != 1 {
		t.Errorf("PurgedFills = %d, want 1", got)
	}
	e, o, err := s[0].Get(context.Background(), k, pol, l.load)
	if err != nil || o != Miss || body(e) != "v2" {
		t.Errorf("Get after the purge = %q, %v, %v; want a new fill v2", body(e), o, err)
	}
}

// TestSecondTierKeepsKeysApart: tenants and scopes (permission sets) never
// read each other's entries through the second tier.
func TestSecondTierKeepsKeysApart(t *testing.T) {
	s, clock, _, _ := fleet(t, 2)
	base := Key{Tenant: "acme", Resource: "property", Scope: "full|au|json", Variant: "1"}
	if _, _, err := s[0].Get(context.Background(), base, pol, newLoader(clock).load); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, k := range []Key{
		{Tenant: "zenith", Resource: base.Resource, Scope: base.Scope, Variant: base.Variant},
		{Tenant: base.Tenant, Resource: base.Resource, Scope: "prices|au|json", Variant: base.Variant},
	} {
		e, _, err := s[1].Get(context.Background(), k, pol, func(context.Context) (*Entry, error) {
			return NewEntry([]byte("own "+k.Tenant+" "+k.Scope), "text/plain", false, clock.Now()), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, body(e))
	}
	want := []string{"own zenith full|au|json", "own acme prices|au|json"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("bodies (-want +got):\n%s", diff)
	}
}
