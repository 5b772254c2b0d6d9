package proxy_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"listingproxy/cache"
	"listingproxy/internal/testkit"
	"listingproxy/proxy"
	"listingproxy/upstream/breaker"
)

// clock is a settable fake clock shared by the proxy and its cache.
type clock = testkit.Clock

func newClock() *clock { return testkit.NewClock(fixedNow) }

var policy = cache.Policy{TTL: time.Minute, StaleWhileRevalidate: time.Minute, StaleIfError: time.Hour, NegativeTTL: 10 * time.Second, FillTimeout: 5 * time.Second}

func resilientServer(t *testing.T, fb *fakeBackend, clk *clock, br *breaker.Registry) *proxy.Server {
	t.Helper()
	s, _ := resilientServerCache(t, fb, clk, br)
	return s
}

// resilientServerCache is resilientServer that also returns its cache, for
// tests that watch its Stats.
func resilientServerCache(t *testing.T, fb *fakeBackend, clk *clock, br *breaker.Registry) (*proxy.Server, *cache.Store) {
	t.Helper()
	c, err := cache.New(cache.Options{MaxBytes: 64 << 20, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	o := proxy.Options{Cache: c, Now: clk.Now, Policy: func(string) cache.Policy { return policy }}
	if br == nil {
		return newServer(t, fb, o), c
	}
	b := br.Wrap(fb, breaker.Backend{Name: "fake", Limit: 4, Tenants: []string{"harbour", "summit"}})
	s, err := proxy.New(testUsers(), []proxy.Tenant{
		{Name: "harbour", Backend: b, BackendName: "fake", Upstream: "harbour"},
		{Name: "summit", Backend: b, BackendName: "fake", Upstream: "summit"},
	}, o)
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

// waitJoined waits until the backend holds the flight's one call and n-1
// other Gets have joined that flight. The cache counts a flight's leader
// before its loader runs, so once the backend has been called Waiters
// counts only the Gets that joined.
func waitJoined(t testing.TB, c *cache.Store, fb *fakeBackend, n int) {
	t.Helper()
	testkit.WaitFor(t, "the callers to join one flight", func() bool {
		return fb.Calls() >= 1 && c.Stats().Waiters >= uint64(n-1)
	})
}

// TestColdBurstIsOneBackendCall holds the backend until every one of n
// concurrent cold requests has joined the first one's flight, then lets it
// answer: one backend call serves them all.
func TestColdBurstIsOneBackendCall(t *testing.T) {
	fb := newFake()
	release := fb.Block()
	s, c := resilientServerCache(t, fb, newClock(), nil)
	const n = 200
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { codes[i] = get(s, "GET", "harbour", "/au/properties.json?status=current").Code })
	}
	waitJoined(t, c, fb, n)
	release()
	wg.Wait()
	if got := fb.Calls(); got != 1 {
		t.Errorf("backend calls = %d, want 1", got)
	}
	for i, c := range codes {
		if c != 200 {
			t.Fatalf("request %d: status %d", i, c)
		}
	}
	if st := c.Stats(); st.Waiters != n-1 || st.Misses != n || st.LoaderCalls != 1 {
		t.Errorf("cache stats: %d waiters, %d misses, %d loader calls; want %d, %d, 1", st.Waiters, st.Misses, st.LoaderCalls, n-1, n)
	}
}

func TestCancelledFirstCallerDoesNotFailOthers(t *testing.T) {
	fb := newFake()
	release := fb.Block()
	s, c := resilientServerCache(t, fb, newClock(), nil)
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan int)
	go func() {
		r := httptest.NewRequest("GET", "/au/properties.xml", nil).WithContext(ctx)
		r.Header.Set("Authorization", basic("harbour"))
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		first <- w.Code
	}()
	second := make(chan *httptest.ResponseRecorder)
	go func() { second <- get(s, "GET", "harbour", "/au/properties.xml") }()
	waitJoined(t, c, fb, 2) // the second caller waits on the first one's flight
	cancel()
	<-first // the cancelled caller gets nothing useful; it must not take the others down
	release()
	w := <-second
	if w.Code != 200 || !strings.Contains(w.Body.String(), "<properties count=\"2\">") {
		t.Errorf("second caller: status %d body %s", w.Code, w.Body)
	}
	if got := fb.Calls(); got != 1 {
		t.Errorf("backend calls = %d, want 1", got)
	}
}

func TestBackendDownServesStaleThen503(t *testing.T) {
	fb := newFake()
	clk := newClock()
	s := resilientServer(t, fb, clk, nil)
	warm := get(s, "GET", "harbour", "/au/properties.xml")
	if warm.Code != 200 {
		t.Fatalf("warm-up status %d", warm.Code)
	}
	notFound := get(s, "GET", "harbour", "/au/properties/999.json")
	if notFound.Code != 200 || !strings.Contains(notFound.Body.String(), "not found") {
		t.Fatalf("warm-up of a not-found: status %d, body %q", notFound.Code, notFound.Body.String())
	}
	fb.Fail(errors.New("database is down"))

	clk.Advance(policy.TTL + policy.StaleWhileRevalidate + time.Second) // past SWR, within stale-if-error
	got := get(s, "GET", "harbour", "/au/properties.xml")
	if got.Code != 200 || got.Body.String() != warm.Body.String() {
		t.Fatalf("warm key while down: status %d, same body %v; want the stale body", got.Code, got.Body.String() == warm.Body.String())
	}
	if cs := got.Header().Get("Cache-Status"); !strings.Contains(cs, "stale-if-error") {
		t.Errorf("Cache-Status = %q, want stale-if-error", cs)
	}
	// A cached not-found is an answer like any other: served stale too, not
	// turned into a 503 once negative_ttl has passed.
	nf := get(s, "GET", "harbour", "/au/properties/999.json")
	if nf.Code != 200 || nf.Body.String() != notFound.Body.String() || !strings.Contains(nf.Header().Get("Cache-Status"), "stale-if-error") {
		t.Errorf("cached not-found while down: status %d, Cache-Status %q, body %q; want the stored not-found, stale-if-error",
			nf.Code, nf.Header().Get("Cache-Status"), nf.Body.String())
	}
	cold := get(s, "GET", "harbour", "/au/agents.xml")
	if cold.Code != http.StatusServiceUnavailable || cold.Header().Get("Retry-After") == "" {
		t.Errorf("cold key while down: status %d Retry-After %q; want 503 with Retry-After", cold.Code, cold.Header().Get("Retry-After"))
	}
	clk.Advance(policy.StaleIfError)
	for _, target := range []string{"/au/properties.xml", "/au/properties/999.json"} {
		if expired := get(s, "GET", "harbour", target); expired.Code != http.StatusServiceUnavailable {
			t.Errorf("%s past stale-if-error: status %d, want 503", target, expired.Code)
		}
	}
}

// TestOpenBreakerFailsFastAndNotFoundNeverTrips drives a backend behind the
// breaker decorator through the proxy: not-found answers never count; once
// harbour's failures open its breaker, harbour gets 503 with the breaker's
// Retry-After and no backend call, and summit (same backend) is still
// served.
func TestOpenBreakerFailsFastAndNotFoundNeverTrips(t *testing.T) {
	fb := newFake()
	clk := newClock()
	br := breaker.NewRegistry(breaker.Options{Settings: breaker.Settings{ConsecutiveFailures: 3, OpenFor: time.Hour}, Now: clk.Now})
	s := resilientServer(t, fb, clk, br)
	state := func(tenant string) breaker.State {
		for _, st := range br.States() {
			if st.Tenant == tenant {
				return st.State
			}
		}
		t.Fatalf("no breaker for %q", tenant)
		return 0
	}
	for i := range 10 { // not-found answers never count as failures
		if w := get(s, "GET", "harbour", "/au/properties/"+string(rune('5'+i%3))+"00.json"); w.Code != 200 {
			t.Fatalf("not found: status %d", w.Code)
		}
	}
	if st := state("harbour"); st != breaker.StateClosed {
		t.Fatalf("breaker %v after not-found answers, want closed", st)
	}
	fb.Fail(errors.New("timeout"))
	for _, q := range []string{"a", "b", "c"} {
		get(s, "GET", "harbour", "/au/properties.json?street_name="+q)
	}
	if st := state("harbour"); st != breaker.StateOpen {
		t.Fatalf("breaker %v after 3 failures, want open", st)
	}
	before := fb.Calls()
	clk.Advance(20 * time.Minute)
	w := get(s, "GET", "harbour", "/au/properties.json?street_name=d")
	if w.Code != http.StatusServiceUnavailable {
		t.Errorf("status %d while open, want 503", w.Code)
	}
	if ra := w.Header().Get("Retry-After"); ra != "2400" {
		t.Errorf("Retry-After = %q, want 2400 (the breaker's remaining 40 minutes)", ra)
	}
	if fb.Calls() != before {
		t.Error("an open breaker still called the backend")
	}
	fb.Fail(nil)
	if w := get(s, "GET", "summit", "/au/properties.json?street_name=d"); w.Code != http.StatusOK {
		t.Errorf("other tenant of the same backend: status %d, want 200", w.Code)
	}
}

func TestNotFoundIsCachedNegatively(t *testing.T) {
	fb := newFake()
	clk := newClock()
	s := resilientServer(t, fb, clk, nil)
	get(s, "GET", "harbour", "/au/properties/999.json")
	w := get(s, "GET", "harbour", "/au/properties/999.json")
	if cs := w.Header().Get("Cache-Status"); !strings.Contains(cs, "negative") {
		t.Errorf("Cache-Status = %q, want a negative hit", cs)
	}
	if got := fb.Calls(); got != 1 {
		t.Errorf("backend calls = %d, want 1", got)
	}
	clk.Advance(policy.NegativeTTL + time.Second)
	get(s, "GET", "harbour", "/au/properties/999.json")
	if got := fb.Calls(); got != 2 {
		t.Errorf("backend calls after negative TTL = %d, want 2", got)
	}
}

// TestAgeFollowsTheClock checks the Age and Date headers of hits (answered
// on the fast path, whose values are shared within a second) and of stale
// answers as the clock moves.
func TestAgeFollowsTheClock(t *testing.T) {
	clk := newClock()
	s := resilientServer(t, newFake(), clk, nil)
	const target = "/au/properties/1.json"
	if w := get(s, "GET", "harbour", target); w.Header().Get("Age") != "" || w.Header().Get("Date") != clk.Now().Format(http.TimeFormat) {
		t.Errorf("miss has Age %q, Date %q; want no Age and the clock's time", w.Header().Get("Age"), w.Header().Get("Date"))
	}
	steps := []struct {
		advance time.Duration
		age     string
		status  string
	}{
		{0, "0", "listingproxy; hit"},
		{0, "0", "listingproxy; hit"},
		{1500 * time.Millisecond, "1", "listingproxy; hit"},
		{0, "1", "listingproxy; hit"},
		{500 * time.Millisecond, "2", "listingproxy; hit"},
		{40 * time.Second, "42", "listingproxy; hit"},
		{30 * time.Second, "72", "listingproxy; hit; detail=stale-while-revalidate"},
	}
	for i, st := range steps {
		clk.Advance(st.advance)
		w := get(s, "GET", "harbour", target)
		if got := w.Header().Get("Cache-Status"); got != st.status {
			t.Fatalf("step %d: Cache-Status %q, want %q", i, got, st.status)
		}
		if got := w.Header().Get("Age"); got != st.age {
			t.Errorf("step %d: Age %q, want %q", i, got, st.age)
		}
		if got, want := w.Header().Get("Date"), clk.Now().Format(http.TimeFormat); got != want {
			t.Errorf("step %d: Date %q, want %q", i, got, want)
		}
	}
}
