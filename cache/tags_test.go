package cache

import (
	"context"
	"errors"
	"testing"
	"time"
)

// tagged returns a loader that answers body carrying tags, counting calls,
// failing while *fail is set.
func tagged(clock *fakeClock, body string, fail *bool, calls *int, tags ...Tag) Loader {
	return func(context.Context) (*Entry, error) {
		*calls++
		if fail != nil && *fail {
			return nil, errBackend
		}
		e := NewEntry([]byte(body), "text/plain", false, clock.Now())
		e.Tags = tags
		return e, nil
	}
}

// TestPurgeTags: a purge by tags covers exactly the tenant's entries that
// carry one of them, soft (the old body only if the refill fails) or hard
// (never again); other entries, and other tenants' entries with the same
// tags, stay hits.
func TestPurgeTags(t *testing.T) {
	p1, p2, p3 := IDTag("property", 1), IDTag("property", 2), IDTag("property", 3)
	keys := map[string]Key{
		"single 1":         {Tenant: "harbour", Resource: "property", Scope: "full|au|xml", Variant: "1"},
		"list 1,2":         {Tenant: "harbour", Resource: "properties", Scope: "full|au|xml", Variant: "status=current"},
		"list 1,2 basic":   {Tenant: "harbour", Resource: "properties", Scope: "basic|au|xml", Variant: "status=current"},
		"list 2,3":         {Tenant: "harbour", Resource: "properties", Scope: "full|au|xml", Variant: "status=sold"},
		"summit single 1":  {Tenant: "summit", Resource: "property", Scope: "full|au|xml", Variant: "1"},
		"summit list 1,2":  {Tenant: "summit", Resource: "properties", Scope: "full|au|xml", Variant: "status=current"},
		"single 3 agent 1": {Tenant: "harbour", Resource: "property", Scope: "full|au|xml", Variant: "3"},
	}
	tags := map[string][]Tag{
		"single 1": {p1}, "list 1,2": {p1, p2}, "list 1,2 basic": {p1, p2}, "list 2,3": {p2, p3},
		"summit single 1": {p1}, "summit list 1,2": {p1, p2}, "single 3 agent 1": {p3, IDTag("agent", 1)},
	}
	purged := map[string]bool{"single 1": true, "list 1,2": true, "list 1,2 basic": true}
	for _, mode := range []PurgeMode{Soft, Hard} {
		for _, failing := range []bool{false, true} {
			t.Run(mode.String()+map[bool]string{false: "", true: " backend failing"}[failing], func(t *testing.T) {
				clock := newClock()
				s := newStore(t, Options{Now: clock.Now})
				fail := false
				calls := map[string]*int{}
				for name, k := range keys {
					calls[name] = new(int)
					if _, o, err := s.Get(context.Background(), k, pol, tagged(clock, "old "+name, &fail, calls[name], tags[name]...)); err != nil || o != Miss {
						t.Fatalf("warm %s: %v, %v", name, o, err)
					}
				}
				clock.Advance(time.Second)
				s.PurgeTags("harbour", []Tag{p1}, mode)
				fail = failing
				for name, k := range keys {
					e, o, err := s.Get(context.Background(), k, pol, tagged(clock, "new "+name, &fail, calls[name], tags[name]...))
					switch {
					case !purged[name]:
						if o != Hit || body(e) != "old "+name || *calls[name] != 1 {
							t.Errorf("%s: %q, %v, %v after %d loads; want the old body as a hit", name, body(e), o, err, *calls[name])
						}
					case !failing:
						if o != Miss || body(e) != "new "+name {
							t.Errorf("%s: %q, %v, %v; want a miss with the new body", name, body(e), o, err)
						}
					case mode == Soft:
						if o != StaleIfError || body(e) != "old "+name {
							t.Errorf("%s: %q, %v, %v; want the old body, stale-if-error", name, body(e), o, err)
						}
					default:
						if !errors.Is(err, errBackend) {
							t.Errorf("%s: %q, %v, %v; want the backend's error", name, body(e), o, err)
						}
					}
				}
				if failing {
					return
				}
				for name, k := range keys { // the refills are current again
					if e, o, _ := s.Get(context.Background(), k, pol, tagged(clock, "x", nil, new(int))); o != Hit || purged[name] && body(e) != "new "+name {
						t.Errorf("%s after the refill: %q, %v; want a hit", name, body(e), o)
					}
				}
			})
		}
	}
}

// TestFillRacingPurgeTags: a fill that started before a purge of a tag its
// body carries is not stored (one racing a purge of other tags is), and a
// request after the purge does not join it (its tags are known only when
// it ends).
func TestFillRacingPurgeTags(t *testing.T) {
	p1, p9 := IDTag("property", 1), IDTag("property", 9)
	for _, tc := range []struct {
		name    string
		purge   Tag
		covered bool
	}{{"its tag", p1, true}, {"another tag", p9, false}} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newClock()
			s := newStore(t, Options{Now: clock.Now})
			l := newLoader(clock).gated()
			l.result = func(_ context.Context, n int32) (*Entry, error) {
				e := NewEntry([]byte("v"+itoa(int(n))), "text/plain", false, clock.Now())
				e.Tags = []Tag{p1}
				return e, nil
			}
			first := make(chan result, 1)
			go func() {
				e, o, err := s.Get(context.Background(), key, pol, l.load)
				first <- result{e, o, err}
			}()
			<-l.started
			s.PurgeTags(key.Tenant, []Tag{tc.purge}, Soft)
			second := make(chan result, 1)
			go func() {
				e, o, err := s.Get(context.Background(), key, pol, l.load)
				second <- result{e, o, err}
			}()
			// The request after the purge fills on its own either way: a
			// fill's tags are known only when it ends.
			<-l.started
			close(l.gate)
			if r := <-first; body(r.e) != "v1" {
				t.Errorf("the caller before the purge got %q, %v", body(r.e), r.err)
			}
			r := <-second
			s.Wait()
			// Uncovered, either fill may be the one kept.
			want, stored := "v2", "v2"
			if body(r.e) != want {
				t.Errorf("the caller after the purge got %q, want %q", body(r.e), want)
			}
			if e, o, _, ok := s.Fresh(key, pol); !ok || o != Hit || body(e) != stored && (tc.covered || body(e) != "v1") {
				t.Errorf("stored: %q, %v, %v; want %q", body(e), o, ok, stored)
			}
			if got, want := s.Stats().PurgedFills, map[bool]uint64{true: 1}[tc.covered]; got != want {
				t.Errorf("PurgedFills = %d, want %d", got, want)
			}
		})
	}
}

// TestPurgeTagsFleet: a purge by tags made in one process covers the
// entries of the others, those in their first tier and those they read
// from the second tier, and a fill another process stores after the
// purge, from before it, is refused.
func TestPurgeTagsFleet(t *testing.T) {
	stores, clock, _, gens := fleet(t, 2)
	p1 := IDTag("agent", 7)
	other := Key{Tenant: "harbour", Resource: "agents", Scope: "full|au|xml", Variant: "name=z"}
	calls := new(int)
	for _, k := range []Key{key, other} {
		tags := []Tag{p1}
		if k == other {
			tags = []Tag{IDTag("agent", 8)}
		}
		if _, _, err := stores[0].Get(context.Background(), k, pol, tagged(clock, "old", nil, calls, tags...)); err != nil {
			t.Fatal(err)
		}
	}
	// Process 1 reads key from the tier into its first tier.
	if e, o, err := stores[1].Get(context.Background(), key, pol, tagged(clock, "x", nil, calls)); err != nil || o != Hit || body(e) != "old" {
		t.Fatalf("process 1 from the tier: %q, %v, %v", body(e), o, err)
	}
	gens.held = true // process 1 hears of the purge late
	stores[0].PurgeTags("harbour", []Tag{p1}, Hard)
	if _, _, _, ok := stores[0].Fresh(key, pol); ok {
		t.Error("process 0 still serves the purged entry")
	}
	if _, _, _, ok := stores[0].Fresh(other, pol); !ok {
		t.Error("process 0 lost an entry without the tag")
	}
	gens.release()
	if _, _, _, ok := stores[1].Fresh(key, pol); ok {
		t.Error("process 1 still serves the purged entry from its first tier")
	}
	// A process that never held it reads the tier's (purged) copy: a miss.
	s2 := newStore(t, Options{Now: clock.Now, SecondTier: stores[0].tier, Generations: gens})
	failing := true
	if e, o, err := s2.Get(context.Background(), key, pol, tagged(clock, "x", &failing, calls)); !errors.Is(err, errBackend) {
		t.Errorf("a new process served the hard-purged tier entry: %q, %v, %v", body(e), o, err)
	}
}

// TestPurgeTagsRecordsBounded: past MaxRecords the oldest record is folded
// into a purge of its whole tenant (more is purged, nothing wrongly kept),
// and records older than the longest lifetime are dropped.
func TestPurgeTagsRecordsBounded(t *testing.T) {
	clock := newClock()
	s := newStore(t, Options{Now: clock.Now, MaxRecords: 2, RecordLifetime: time.Minute})
	calls := new(int)
	k2 := Key{Tenant: "harbour", Resource: "agents", Variant: "x"}
	if _, _, err := s.Get(context.Background(), k2, pol, tagged(clock, "untagged", nil, calls)); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	s.PurgeTags("harbour", []Tag{1}, Soft)
	s.PurgeTags("harbour", []Tag{2}, Soft)
	if _, _, _, ok := s.Fresh(k2, pol); !ok {
		t.Fatal("an untagged entry was purged within the bound")
	}
	s.PurgeTags("harbour", []Tag{3}, Soft)
	if n := s.tags.len(); n != 2 {
		t.Errorf("records = %d, want 2", n)
	}
	if _, _, _, ok := s.Fresh(k2, pol); ok {
		t.Error("the folded record did not purge its tenant")
	}
	// Records live for the longest lifetime seen (pol's, 1h+) at least.
	clock.Advance(pol.TTL + max(pol.StaleIfError, pol.StaleWhileRevalidate) + time.Second)
	s.PurgeTags("summit", []Tag{4}, Soft)
	if n := s.tags.len(); n != 1 {
		t.Errorf("records after the lifetime = %d, want 1", n)
	}
}

// TestPurgeTagsRecordsQueueBounded: one tag purged again and again keeps
// one record, and its queue of deadlines stays bounded.
func TestPurgeTagsRecordsQueueBounded(t *testing.T) {
	clock := newClock()
	s := newStore(t, Options{Now: clock.Now})
	for range 10_000 {
		clock.Advance(time.Millisecond)
		s.PurgeTags("harbour", []Tag{IDTag("property", 1)}, Soft)
	}
	s.tags.mu.RLock()
	n, q := len(s.tags.m), len(s.tags.queue)
	s.tags.mu.RUnlock()
	if n != 1 || q > 2*n+1024 {
		t.Errorf("records %d, queue %d; want 1 and at most %d", n, q, 2*n+1024)
	}
}
