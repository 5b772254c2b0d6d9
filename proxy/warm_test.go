package proxy_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"listingproxy/proxy"
	"listingproxy/upstream"
)

var warmCallers = []struct{ user, target string }{
	{"harbour", "/au/properties.json?detail=full"},
	{"harbour-noprice", "/au/properties.json?detail=full"},
	{"summit", "/au/properties.json?detail=full"},
	{"harbour", "/au/properties.xml?detail=full"},
	{"harbour", "/au/agents/5.json"},
	// Same tenant and permissions as harbour, same criteria spelled
	// otherwise: harbour's key, recorded once.
	{"harbour-2", "/au/properties.json?detail=full&unknown=1"},
}

// TestWarmUpRefillsEachCallersKey: the requests one server filled are
// recorded once per cache key (harbour-2's request shares harbour's key);
// a new server (a restart: an empty cache) given them fills every key
// without a client request, one backend call each, paced by the budget
// (asked once per replay, for the caller's tenant); then each caller
// (tenant, permission level, format) gets a hit with its own body, the one
// the first server gave it.
func TestWarmUpRefillsEachCallersKey(t *testing.T) {
	fb := newFake()
	a := newServer(t, fb, proxy.Options{Cache: newCache(t)})
	bodies := map[string]string{}
	for _, c := range warmCallers {
		w := get(a, "GET", c.user, c.target)
		if w.Code != 200 {
			t.Fatalf("%s %s: %d %s", c.user, c.target, w.Code, w.Body)
		}
		bodies[c.user+" "+c.target] = w.Body.String()
	}
	if bodies["harbour "+warmCallers[0].target] == bodies["harbour-noprice "+warmCallers[0].target] {
		t.Fatal("full and no-price bodies are equal: the test would prove nothing")
	}
	targets := a.HotTargets(100, "")
	if len(targets) != 5 {
		t.Fatalf("recorded %d targets, want 5 (one per key): %+v", len(targets), targets)
	}
	if got := a.HotTargets(100, "summit"); len(got) != 1 || got[0].User != "summit" {
		t.Errorf("summit's targets: %+v", got)
	}

	fb2 := newFake()
	var foreground atomic.Int32 // backend calls not marked background
	fb2.Result = func(ctx context.Context, _ upstream.Scope) error {
		if !upstream.IsBackground(ctx) {
			foreground.Add(1)
		}
		return nil
	}
	b := newServer(t, fb2, proxy.Options{Cache: newCache(t)})
	asked := map[string]int{}
	st := b.WarmUp(context.Background(), targets, func(_ context.Context, tenant string) error {
		asked[tenant]++
		return nil
	})
	if st != (proxy.WarmStats{Done: 5}) || b.WarmStats() != st {
		t.Errorf("WarmUp = %+v (WarmStats %+v), want 5 done", st, b.WarmStats())
	}
	if foreground.Load() != 0 {
		t.Errorf("%d warm-up backend calls were not background calls", foreground.Load())
	}
	if fb2.Calls() != 5 || asked["harbour"] != 4 || asked["summit"] != 1 {
		t.Errorf("%d backend calls, budget asked %v; want 5 calls, harbour 4, summit 1", fb2.Calls(), asked)
	}
	for _, c := range warmCallers {
		w := get(b, "GET", c.user, c.target)
		if cs := w.Header().Get("Cache-Status"); w.Code != 200 || cs != "listingproxy; hit" || w.Body.String() != bodies[c.user+" "+c.target] {
			t.Errorf("%s %s after the warm-up: %d %q; want a hit with its own body", c.user, c.target, w.Code, cs)
		}
	}
	if fb2.Calls() != 5 {
		t.Errorf("clients' requests after the warm-up made %d backend calls", fb2.Calls()-5)
	}
	// A second run finds every key fresh, and spends no token on them.
	clear(asked)
	if st := b.WarmUp(context.Background(), targets, func(_ context.Context, tenant string) error {
		asked[tenant]++
		return nil
	}); st != (proxy.WarmStats{Skipped: 5}) || len(asked) != 0 {
		t.Errorf("second WarmUp = %+v, budget asked %v; want 5 skipped, never asked", st, asked)
	}
}

// TestWarmUpNeverFillsAnotherCallersKey: a target replayed as summit (its
// request naming harbour's path and criteria) fills summit's key alone:
// harbour's and harbour-noprice's requests of that URL are still misses,
// and summit's is a hit with summit's body.
func TestWarmUpNeverFillsAnotherCallersKey(t *testing.T) {
	fb := newFake()
	s := newServer(t, fb, proxy.Options{Cache: newCache(t)})
	target := "/au/properties.json?detail=full"
	st := s.WarmUp(context.Background(), []proxy.WarmTarget{{User: "summit", Target: target}, {User: "harbour-noprice", Target: "/au/properties.xml"}}, nil)
	if st.Done != 2 {
		t.Fatalf("WarmUp = %+v, want 2 done", st)
	}
	for _, u := range []string{"harbour", "harbour-noprice"} {
		if w := get(s, "GET", u, target); w.Header().Get("Cache-Status") != "listingproxy; fwd=miss; stored" {
			t.Errorf("%s after summit's warm-up: %q, want a miss", u, w.Header().Get("Cache-Status"))
		}
	}
	w := get(s, "GET", "summit", target)
	if w.Header().Get("Cache-Status") != "listingproxy; hit" || !containsAll(w.Body.String(), "Summit Avenue") || containsAll(w.Body.String(), "Harbour Street") {
		t.Errorf("summit after its warm-up: %q %s; want a hit with summit's listings", w.Header().Get("Cache-Status"), w.Body)
	}
	if w := get(s, "GET", "harbour", "/au/properties.xml"); w.Header().Get("Cache-Status") != "listingproxy; fwd=miss; stored" {
		t.Errorf("harbour (full and prices) after harbour-noprice's warm-up: %q, want a miss", w.Header().Get("Cache-Status"))
	}
}

// TestWarmUpCountsAndBudget: unknown users are skipped without asking the
// budget; targets that are no API request fail; a backend failure fails;
// a budget that refuses (its context ended) stops the run with nothing
// more called.
func TestWarmUpCountsAndBudget(t *testing.T) {
	fb := newFake()
	s := newServer(t, fb, proxy.Options{Cache: newCache(t)})
	asked := 0
	st := s.WarmUp(context.Background(), []proxy.WarmTarget{
		{User: "nobody", Target: "/au/properties.xml"},
		{User: "harbour", Target: "/au/unknown.xml"},
		{User: "harbour", Target: "http://evil.example/au/properties.xml"},
		{User: "harbour", Target: "/au/../au/properties.xml"},
		{User: "harbour", Target: "/zz/properties.xml"},
		{User: "harbour", Target: "/au/properties.xml?limit=x"},
		{User: "harbour", Target: "/au/properties.xml"},
	}, func(context.Context, string) error { asked++; return nil })
	if want := (proxy.WarmStats{Done: 1, Failed: 5, Skipped: 1}); st != want || asked != 1 || fb.Calls() != 1 {
		t.Errorf("WarmUp = %+v, budget asked %d, %d backend calls; want %+v, 1, 1 (no token for a target that is no request)", st, asked, fb.Calls(), want)
	}

	fb.Fail(errors.New("down"))
	if st := s.WarmUp(context.Background(), []proxy.WarmTarget{{User: "summit", Target: "/au/agents.xml"}}, nil); st.Failed != 1 {
		t.Errorf("WarmUp with the backend failing = %+v, want 1 failed", st)
	}
	fb.Fail(nil)

	calls := fb.Calls()
	tokens := 2
	var many []proxy.WarmTarget
	for i := range 5 {
		many = append(many, proxy.WarmTarget{User: "summit", Target: fmt.Sprintf("/au/properties.xml?limit=%d", i+1)})
	}
	st = s.WarmUp(context.Background(), many, func(context.Context, string) error {
		if tokens == 0 {
			return context.Canceled
		}
		tokens--
		return nil
	})
	if st.Done != 2 || fb.Calls()-calls != 2 {
		t.Errorf("budget of 2: %+v, %d backend calls; want 2 done, 2 calls", st, fb.Calls()-calls)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !contains(s, sub) {
			return false
		}
	}
	return true
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
