package cache

import (
	"context"
	"errors"
	"testing"
	"time"
)

// warmThenPurge fills k with "v1" through a loader that fails once *fail is
// set, lets age pass, and purges k's tenant with mode.
func warmThenPurge(t *testing.T, s *Store, clock *fakeClock, k Key, age time.Duration, purge func()) (l *fakeLoader, fail *bool) {
	t.Helper()
	l = newLoader(clock)
	fail = new(bool)
	l.result = func(_ context.Context, n int32) (*Entry, error) {
		if *fail {
			return nil, errBackend
		}
		return NewEntry([]byte("v"+itoa(int(n))), "text/plain", false, clock.Now()), nil
	}
	if e, _, err := s.Get(context.Background(), k, pol, l.load); err != nil || body(e) != "v1" {
		t.Fatalf("warm-up Get = %q, %v", body(e), err)
	}
	clock.Advance(age)
	purge()
	return l, fail
}

func TestPurgeModes(t *testing.T) {
	type want struct {
		body string
		o    Outcome
		err  error
	}
	tests := []struct {
		name  string
		mode  PurgeMode
		scope string // "resource", "tenant" or "all"
		age   time.Duration
		fail  bool
		want  want
	}{
		{"soft, backend fails: old body", Soft, "tenant", time.Second, true, want{"v1", StaleIfError, nil}},
		{"soft resource, backend fails: old body", Soft, "resource", time.Second, true, want{"v1", StaleIfError, nil}},
		{"soft all, backend fails: old body", Soft, "all", time.Second, true, want{"v1", StaleIfError, nil}},
		{"soft, backend answers: new body", Soft, "tenant", time.Second, false, want{"v2", Miss, nil}},
		{"soft, within stale-while-revalidate: waits for the fill", Soft, "tenant", pol.TTL + time.Second, false, want{"v2", Miss, nil}},
		{"soft, past stale-if-error: error", Soft, "tenant", pol.TTL + pol.StaleIfError, true, want{"", Miss, errBackend}},
		{"hard, backend fails: error", Hard, "tenant", time.Second, true, want{"", Miss, errBackend}},
		{"hard resource, backend fails: error", Hard, "resource", time.Second, true, want{"", Miss, errBackend}},
		{"hard all, backend fails: error", Hard, "all", time.Second, true, want{"", Miss, errBackend}},
		{"hard, backend answers: new body", Hard, "tenant", time.Second, false, want{"v2", Miss, nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newClock()
			s := newStore(t, Options{Now: clock.Now})
			l, fail := warmThenPurge(t, s, clock, key, tt.age, func() {
				switch tt.scope {
				case "resource":
					s.Purge(key.Tenant, key.Resource, tt.mode)
				case "tenant":
					s.Purge(key.Tenant, "", tt.mode)
				default:
					s.PurgeAll(tt.mode)
				}
			})
			if _, _, _, ok := s.Fresh(key, pol); ok {
				t.Errorf("Fresh after a %v purge: ok, want a miss", tt.mode)
			}
			*fail = tt.fail
			e, o, err := s.Get(context.Background(), key, pol, l.load)
			if body(e) != tt.want.body && !(e == nil && tt.want.body == "") || o != tt.want.o || !errors.Is(err, tt.want.err) {
				t.Errorf("Get after purge = %q, %v, %v; want %q, %v, %v", body(e), o, err, tt.want.body, tt.want.o, tt.want.err)
			}
			if l.Calls() != 2 {
				t.Errorf("loader calls = %d, want 2 (the purge makes the next Get fill)", l.Calls())
			}
			if tt.fail && tt.want.err == nil {
				// Stale-if-error does not un-purge: the next Get tries
				// again, and takes the new body once the backend answers.
				*fail = false
				if e, o, err := s.Get(context.Background(), key, pol, l.load); err != nil || o != Miss || body(e) != "v3" {
					t.Errorf("Get once the backend is back = %q, %v, %v; want miss v3", body(e), o, err)
				}
			}
			if e, o, _ := s.Get(context.Background(), key, pol, l.load); !tt.fail && (o != Hit || body(e) != "v2") {
				t.Errorf("Get after the refill = %q, %v; want hit v2", body(e), o)
			}
			st := s.Stats()
			soft, hard := uint64(0), uint64(0)
			if tt.mode == Soft {
				soft = 1
			} else {
				hard = 1
			}
			if st.SoftPurges != soft || st.HardPurges != hard {
				t.Errorf("stats: soft %d, hard %d purges; want %d, %d", st.SoftPurges, st.HardPurges, soft, hard)
			}
		})
	}
}

// TestSoftPurgeKeepsNegativeForErrors: a not-found answer is an answer
// like any other: a soft purge makes it stale, and when the refill fails it
// is served as StaleIfError; a hard purge leaves nothing to serve.
func TestSoftPurgeKeepsNegativeForErrors(t *testing.T) {
	for _, mode := range []PurgeMode{Soft, Hard} {
		t.Run(mode.String(), func(t *testing.T) {
			clock := newClock()
			s := newStore(t, Options{Now: clock.Now})
			neg := func(context.Context) (*Entry, error) {
				return NewEntry([]byte("not found"), "text/plain", true, clock.Now()), nil
			}
			if _, o, err := s.Get(context.Background(), key, pol, neg); err != nil || o != Miss {
				t.Fatalf("warm-up = %v, %v", o, err)
			}
			s.Purge(key.Tenant, "", mode)
			failing := func(context.Context) (*Entry, error) { return nil, errBackend }
			e, o, err := s.Get(context.Background(), key, pol, failing)
			if mode == Hard {
				if !errors.Is(err, errBackend) {
					t.Errorf("after a hard purge Get = %q, %v, %v; want errBackend", body(e), o, err)
				}
				return
			}
			if err != nil || o != StaleIfError || !e.Negative || body(e) != "not found" {
				t.Errorf("after a soft purge Get = %q, %v, %v; want the stored not-found as StaleIfError", body(e), o, err)
			}
		})
	}
}

// TestFillRacingPurge: a fill that started before a purge (either mode) is
// served to the callers that were waiting on it, and never to a request
// after the purge: it is not stored, a later request starts its own fill,
// and when that fails a soft purge falls back to the body from before the
// racing fill.
func TestFillRacingPurge(t *testing.T) {
	for _, mode := range []PurgeMode{Soft, Hard} {
		t.Run(mode.String(), func(t *testing.T) {
			clock := newClock()
			s := newStore(t, Options{Now: clock.Now})
			l, fail := warmThenPurge(t, s, clock, key, pol.TTL+pol.StaleWhileRevalidate, func() {})
			gate := make(chan struct{})
			inner := l.result
			l.result = func(ctx context.Context, n int32) (*Entry, error) {
				if n == 2 {
					<-gate
				}
				return inner(ctx, n)
			}
			// Past stale-while-revalidate: this Get waits for fill 2.
			first := make(chan result, 1)
			go func() {
				e, o, err := s.Get(context.Background(), key, pol, l.load)
				first <- result{e, o, err}
			}()
			<-l.started // the warm-up's call
			<-l.started // call 2 is running
			s.Purge(key.Tenant, "", mode)

			// A request after the purge does not join fill 2.
			*fail = true
			e, o, err := s.Get(context.Background(), key, pol, l.load)
			switch mode {
			case Soft:
				if err != nil || o != StaleIfError || body(e) != "v1" {
					t.Errorf("post-purge Get, backend failing = %q, %v, %v; want stale-if-error v1", body(e), o, err)
				}
			case Hard:
				if !errors.Is(err, errBackend) {
					t.Errorf("post-purge Get, backend failing = %q, %v, %v; want errBackend", body(e), o, err)
				}
			}
			*fail = false
			close(gate)
			if r := <-first; r.err != nil || body(r.e) != "v2" || r.o != Miss {
				t.Errorf("pre-purge caller = %q, %v, %v; want miss v2 (its own fill)", body(r.e), r.o, r.err)
			}
			s.Wait()
			if st := s.Stats(); st.PurgedFills != 1 {
				t.Errorf("purged fills = %d, want 1", st.PurgedFills)
			}
			if e, o, err := s.Get(context.Background(), key, pol, l.load); err != nil || o != Miss || body(e) != "v4" {
				t.Errorf("later Get = %q, %v, %v; want miss v4 (fill 2 was not stored)", body(e), o, err)
			}
		})
	}
}

// TestPurgeModesCombine: purges of different scopes and modes combine per
// key; a later soft purge of a wider scope never softens an earlier hard
// one, and records made redundant are dropped.
func TestPurgeModesCombine(t *testing.T) {
	clock := newClock()
	s := newStore(t, Options{Now: clock.Now})
	a := Key{"a", "r1", "s", "v"}
	a2 := Key{"a", "r2", "s", "v"}
	b := Key{"b", "r1", "s", "v"}
	bodies := map[Key]string{}
	fail := false
	get := func(k Key) (*Entry, Outcome, error) {
		return s.Get(context.Background(), k, pol, func(context.Context) (*Entry, error) {
			if fail {
				return nil, errBackend
			}
			return NewEntry([]byte(bodies[k]), "text/plain", false, clock.Now()), nil
		})
	}
	for _, k := range []Key{a, a2, b} {
		bodies[k] = k.Tenant + "/" + k.Resource
		if _, _, err := get(k); err != nil {
			t.Fatal(err)
		}
	}
	s.Purge("a", "r1", Hard)
	s.Purge("a", "", Soft)
	s.PurgeAll(Soft)
	fail = true
	for k, wantStale := range map[Key]bool{a: false, a2: true, b: true} {
		e, o, err := get(k)
		switch {
		case wantStale && (err != nil || o != StaleIfError || body(e) != bodies[k]):
			t.Errorf("%v = %q, %v, %v; want stale-if-error %q", k, body(e), o, err, bodies[k])
		case !wantStale && !errors.Is(err, errBackend):
			t.Errorf("%v = %q, %v, %v; want errBackend (hard-purged)", k, body(e), o, err)
		}
	}
	g := s.gens.Load()
	if len(g.tenant) != 0 || len(g.resource) != 1 {
		t.Errorf("records: %v tenant, %v resource; want only a/r1's hard purge", g.tenant, g.resource)
	}
	s.PurgeAll(Hard)
	if g := s.gens.Load(); len(g.tenant) != 0 || len(g.resource) != 0 {
		t.Errorf("after PurgeAll(Hard): %v tenant, %v resource records; want none", g.tenant, g.resource)
	}
}

// TestSoftPurgeKeepsCallersApart: under a soft purge, the stale body each
// caller may get is its own key's: tenants and permission levels (Scope)
// never share one, and a purge of one tenant leaves the others fresh.
func TestSoftPurgeKeepsCallersApart(t *testing.T) {
	clock := newClock()
	s := newStore(t, Options{Now: clock.Now})
	keys := []Key{
		{"a", "au/properties/1", "full|au|json", ""},
		{"a", "au/properties/1", "prices|au|json", ""},
		{"a", "au/properties/1", "|au|json", ""},
		{"b", "au/properties/1", "full|au|json", ""},
		{"b", "au/properties/1", "|au|json", ""},
	}
	want := func(k Key) string { return k.Tenant + "|" + k.Scope }
	fail := false
	load := func(k Key) Loader {
		return func(context.Context) (*Entry, error) {
			if fail {
				return nil, errBackend
			}
			return NewEntry([]byte(want(k)), "text/plain", false, clock.Now()), nil
		}
	}
	for _, k := range keys {
		if _, _, err := s.Get(context.Background(), k, pol, load(k)); err != nil {
			t.Fatal(err)
		}
	}
	s.Purge("a", "", Soft)
	fail = true
	for _, k := range keys {
		wantO := Hit
		if k.Tenant == "a" {
			wantO = StaleIfError
		}
		if e, o, err := s.Get(context.Background(), k, pol, load(k)); err != nil || o != wantO || body(e) != want(k) {
			t.Errorf("%v = %q, %v, %v; want %v %q", k, body(e), o, err, wantO, want(k))
		}
	}
}
