package cache

import (
	"context"
	"sync"
	"testing"
	"time"

	"listingproxy/internal/testkit"
)

var aheadPol = Policy{TTL: time.Minute, StaleWhileRevalidate: time.Minute, StaleIfError: time.Hour, RefreshAhead: 0.8, RefreshHits: 2}

// get is a Get through the proxy's path: Fresh first, Get when it says so.
func getVia(t *testing.T, s *Store, k Key, p Policy, load Loader) (*Entry, Outcome) {
	t.Helper()
	if e, o, _, ok := s.Fresh(k, p); ok {
		return e, o
	}
	e, o, err := s.Get(context.Background(), k, p, load)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	return e, o
}

// TestRefreshAhead: a hot entry past RefreshAhead of its TTL is fetched
// again in the background by the first hit that finds it there (that hit
// still gets the stored body), once, as a background load; the new body
// replaces it before it expires. A cold entry is not refreshed.
func TestRefreshAhead(t *testing.T) {
	clock := newClock()
	s := newStore(t, Options{Now: clock.Now})
	l := newLoader(clock)
	var mu sync.Mutex
	var background []bool
	inner := func(ctx context.Context, n int32) (*Entry, error) {
		mu.Lock()
		background = append(background, Background(ctx))
		mu.Unlock()
		return NewEntry([]byte("v"+itoa(int(n))), "text/plain", false, clock.Now()), nil
	}
	l.result = inner
	hot, cold := key, Key{Tenant: "harbour", Resource: "au/properties/2"}
	getVia(t, s, hot, aheadPol, l.load) // the fill
	getVia(t, s, cold, aheadPol, l.load)
	for range 2 {
		if _, o := getVia(t, s, hot, aheadPol, l.load); o != Hit {
			t.Fatalf("warm hit = %v", o)
		}
	}
	getVia(t, s, cold, aheadPol, l.load) // one hit: not hot
	<-l.started
	<-l.started                     // the two fills
	clock.Advance(47 * time.Second) // before 80% of the TTL (48s)
	if _, o := getVia(t, s, hot, aheadPol, l.load); o != Hit || l.Calls() != 2 {
		t.Fatalf("before the refresh point: %v, %d calls; want a hit and no refresh", o, l.Calls())
	}
	clock.Advance(2 * time.Second) // 49s of 60s: past 0.8
	e, o := getVia(t, s, hot, aheadPol, l.load)
	if o != Hit || body(e) != "v1" {
		t.Fatalf("at the refresh point: %q %v; want the stored body as a hit", body(e), o)
	}
	if n := <-l.started; n != 3 {
		t.Fatalf("refresh call number %d, want 3", n)
	}
	testkit.WaitFor(t, "the refreshed body to be stored", func() bool {
		e, _ := getVia(t, s, hot, aheadPol, l.load)
		return body(e) == "v3"
	})
	if got := l.Calls(); got != 3 {
		t.Errorf("loader calls = %d, want 3 (one refresh-ahead)", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if !background[2] || background[0] {
		t.Errorf("background flags of the loads = %v; want only the refresh's set", background)
	}
	if _, o := getVia(t, s, cold, aheadPol, l.load); o != Hit || l.Calls() != 3 {
		t.Errorf("a cold entry at the refresh point: %v, %d calls; want a hit and no refresh", o, l.Calls())
	}
	st := s.Stats()
	if st.RefreshesAhead != 1 || st.RefreshesSkipped != 0 {
		t.Errorf("stats: %d refreshes ahead, %d skipped; want 1, 0", st.RefreshesAhead, st.RefreshesSkipped)
	}
	// The refreshed entry lives its own TTL: at the old expiry it is fresh.
	clock.Advance(12 * time.Second)
	if e, o := getVia(t, s, hot, aheadPol, l.load); o != Hit || body(e) != "v3" {
		t.Errorf("past the old entry's TTL: %q %v; want the refreshed body as a hit", body(e), o)
	}
}

// TestRefreshAheadBudget: past the budget a refresh-ahead is skipped and
// counted, and the entry expires and refills as without refresh-ahead.
func TestRefreshAheadBudget(t *testing.T) {
	clock := newClock()
	var asked []Key
	s := newStore(t, Options{Now: clock.Now, RefreshBudget: func(k Key) bool { asked = append(asked, k); return false }})
	l := newLoader(clock)
	for range 3 {
		getVia(t, s, key, aheadPol, l.load)
	}
	clock.Advance(55 * time.Second)
	for range 3 {
		if _, o := getVia(t, s, key, aheadPol, l.load); o != Hit {
			t.Fatalf("a hit past the refresh point = %v", o)
		}
	}
	if l.Calls() != 1 || len(asked) != 1 || asked[0] != key {
		t.Errorf("%d loader calls, budget asked %v; want 1 call and the budget asked once for the key", l.Calls(), asked)
	}
	if st := s.Stats(); st.RefreshesSkipped != 1 || st.RefreshesAhead != 0 {
		t.Errorf("stats: %d skipped, %d ahead; want 1, 0", st.RefreshesSkipped, st.RefreshesAhead)
	}
}

// TestRefreshAheadRacingPurge: a purge that lands while a refresh-ahead
// runs keeps its result out of the cache: the next request fills again.
func TestRefreshAheadRacingPurge(t *testing.T) {
	clock := newClock()
	s := newStore(t, Options{Now: clock.Now})
	l := newLoader(clock)
	for range 3 {
		getVia(t, s, key, aheadPol, l.load)
	}
	<-l.started
	l.gate = make(chan struct{})
	clock.Advance(55 * time.Second)
	getVia(t, s, key, aheadPol, l.load) // starts the refresh, held at the gate
	<-l.started
	s.Purge(key.Tenant, "", Hard)
	close(l.gate)
	testkit.WaitFor(t, "the refresh to end", func() bool { return s.Stats().PurgedFills == 1 })
	e, o := getVia(t, s, key, aheadPol, l.load)
	if o != Miss || body(e) != "v3" {
		t.Errorf("after a purge during the refresh: %q %v; want a new fill (v3)", body(e), o)
	}
}

// TestRefreshAheadThroughHints: hits through a Hint (the proxy's front
// memo) count towards an entry's hotness as lookups do, and once it is hot
// a hit through its Hint at the refresh point is not answered there, so
// that the caller's Get starts the refresh-ahead; a cold entry's Hint
// still answers. Hits of both kinds add up, under any RefreshHits.
func TestRefreshAheadThroughHints(t *testing.T) {
	clock := newClock()
	s := newStore(t, Options{Now: clock.Now})
	l := newLoader(clock)
	l.result = func(_ context.Context, n int32) (*Entry, error) {
		return NewEntry([]byte("v"+itoa(int(n))), "text/plain", false, clock.Now()), nil
	}
	hot, mixed, cold := key, Key{Tenant: "harbour", Resource: "au/properties/2"}, Key{Tenant: "harbour", Resource: "au/properties/3"}
	hints := map[Key]Hint{}
	for _, k := range []Key{hot, mixed, cold} {
		getVia(t, s, k, aheadPol, l.load) // the fill
		<-l.started
	}
	s.Wait()
	for _, k := range []Key{hot, mixed, cold} {
		_, o, _, h, ok := s.FreshHashedHint(k, s.VariantHash(k.Variant), aheadPol) // a lookup: one hit
		if !ok || o != Hit || h == (Hint{}) {
			t.Fatalf("%v: FreshHashedHint = %v, %v, Hint %v", k.Resource, o, ok, h != (Hint{}))
		}
		hints[k] = h
	}
	through := func(k Key, p Policy) bool {
		t.Helper()
		_, o, _, ok := s.FreshHint(hints[k], p)
		if ok && o != Hit {
			t.Fatalf("%v: FreshHint = %v", k.Resource, o)
		}
		return ok
	}
	// The second hits: the hot entry's through its Hint, the mixed one's
	// a lookup.
	through(hot, aheadPol)
	if _, o := getVia(t, s, mixed, aheadPol, l.load); o != Hit {
		t.Fatalf("mixed: %v", o)
	}
	// Under a Policy that asks for more hits, the hot entry is counted on.
	more := aheadPol
	more.RefreshHits = 4
	clock.Advance(49 * time.Second) // past 0.8 of the TTL
	for n := 3; n <= 4; n++ {
		if !through(hot, more) {
			t.Fatalf("the hot entry's Hint did not answer its hit %d under RefreshHits 4", n)
		}
	}
	if l.Calls() != 3 {
		t.Fatalf("loader calls = %d, want the 3 fills (no refresh while counting)", l.Calls())
	}
	for _, k := range []Key{hot, mixed} {
		if through(k, aheadPol) {
			t.Errorf("%v: a hot entry's Hint answered at the refresh point; want the caller sent to Get", k.Resource)
		}
	}
	if !through(cold, aheadPol) {
		t.Error("a cold entry's Hint did not answer at the refresh point")
	}
	if e, o := getVia(t, s, hot, aheadPol, l.load); o != Hit || body(e) != "v1" {
		t.Fatalf("Get at the refresh point: %q %v; want the stored body as a hit", body(e), o)
	}
	if n := <-l.started; n != 4 {
		t.Fatalf("refresh call number %d, want 4", n)
	}
	if l.Calls() != 4 {
		t.Errorf("loader calls = %d, want 4 (one refresh-ahead)", l.Calls())
	}
}
