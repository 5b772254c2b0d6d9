package proxy_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"listingproxy/proxy"
)

// TestTenantRateLimit: a tenant past its rate limit gets 429 with
// Retry-After and the single-error body, before the cache (a hit counts
// too); other tenants are not affected, and the bucket refills with time.
func TestTenantRateLimit(t *testing.T) {
	clk := newClock()
	fb := newFake()
	var mu sync.Mutex
	var seen []proxy.RequestInfo
	s, err := proxy.New(testUsers(), []proxy.Tenant{
		{Name: "harbour", Backend: fb, BackendName: "fake", Upstream: "harbour", RateLimit: proxy.Limit{PerSecond: 0.5, Burst: 2}},
		{Name: "summit", Backend: fb, BackendName: "fake", Upstream: "summit"},
	}, proxy.Options{Now: clk.Now, Cache: newCache(t), Observe: func(_ http.ResponseWriter, i proxy.RequestInfo) {
		mu.Lock()
		seen = append(seen, i)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		user, target string
		advance      time.Duration
		status       int
		retry, body  string
	}{
		{user: "harbour", target: "/au/properties.json", status: 200},
		{user: "harbour", target: "/au/properties.json", status: 200}, // a cache hit spends a token too
		{user: "harbour", target: "/au/properties.json", status: 429, retry: "2", body: `{"error":"Too many requests; please slow down and try again shortly"}` + "\n"},
		{user: "harbour-2", target: "/au/agents.xml", status: 429, retry: "2", body: xmlHeader + "<error>Too many requests; please slow down and try again shortly</error>\n"},
		{user: "summit", target: "/au/properties.json", status: 200},
		{user: "harbour", target: "/au/properties.json", advance: time.Second, status: 429, retry: "1"},
		{user: "harbour", target: "/au/properties.json", advance: time.Second, status: 200},
	}
	for i, st := range steps {
		clk.Advance(st.advance)
		w := get(s, "GET", st.user, st.target)
		if w.Code != st.status || w.Header().Get("Retry-After") != st.retry {
			t.Errorf("step %d: status %d Retry-After %q, want %d %q", i, w.Code, w.Header().Get("Retry-After"), st.status, st.retry)
		}
		if st.body != "" {
			if diff := cmp.Diff(st.body, w.Body.String()); diff != "" {
				t.Errorf("step %d: body (-want +got):\n%s", i, diff)
			}
		}
	}
	if got := fb.Calls(); got != 2 {
		t.Errorf("backend calls = %d, want 2 (harbour's first list and summit's)", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(proxy.RequestInfo{Tenant: "harbour", Backend: "fake", User: "harbour", Rejection: proxy.RejectTenantLimit}, seen[2], cmpopts.EquateErrors()); diff != "" {
		t.Errorf("observed (-want +got):\n%s", diff)
	}
}
