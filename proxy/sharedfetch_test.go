package proxy_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"listingproxy/cache"
	"listingproxy/proxy"
)

// TestSharedFetch: for a tenant with ShareFetch, one backend call serves
// every format and permission level of a request (XML and JSON, callers
// with full and prices, full, and none), and each variant's body is what a
// server without sharing renders for it. Tenants never share a fetch, and
// a purge of the resource makes the next request fetch again.
func TestSharedFetch(t *testing.T) {
	fb := newFake()
	c := newCache(t)
	tenants := func(share bool) []proxy.Tenant {
		return []proxy.Tenant{
			{Name: "harbour", Backend: fb, BackendName: "fake", Upstream: "harbour", ShareFetch: share},
			{Name: "summit", Backend: fb, BackendName: "fake", Upstream: "summit", ShareFetch: share},
		}
	}
	now := func() time.Time { return fixedNow }
	shared, err := proxy.New(testUsers(), tenants(true), proxy.Options{Cache: c, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := proxy.New(testUsers(), tenants(false), proxy.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		query string
		users []string
	}{
		{"/au/properties.%s?detail=full", []string{"harbour", "harbour-noprice"}},
		{"/au/properties.%s", []string{"harbour", "harbour-noprice", "harbour-short"}},
		{"/au/properties/1.%s", []string{"harbour", "harbour-noprice"}},
		{"/au/properties/99.%s", []string{"harbour", "harbour-noprice"}},
		{"/au/agents.%s?detail=full", []string{"harbour", "harbour-noprice"}},
	} {
		before := fb.Calls()
		for _, user := range tc.users {
			for _, ext := range []string{"xml", "json"} {
				target := strings.Replace(tc.query, "%s", ext, 1)
				got, want := get(shared, "GET", user, target), get(plain, "GET", user, target)
				if got.Code != http.StatusOK || got.Body.String() != want.Body.String() {
					t.Errorf("%s as %s: %d\n%s\nwant %d\n%s", target, user, got.Code, got.Body, want.Code, want.Body)
				}
			}
		}
		// plain made one call per variant; shared made one in all.
		variants := int64(2 * len(tc.users))
		if got := fb.Calls() - before - variants; got != 1 {
			t.Errorf("%s: %d backend calls for %d variants, want 1", tc.query, got, variants)
		}
	}
	before := fb.Calls()
	get(shared, "GET", "summit", "/au/properties.xml?detail=full")
	if fb.Calls()-before != 1 {
		t.Errorf("summit's first request made %d calls, want 1 (tenants never share a fetch)", fb.Calls()-before)
	}
	c.Purge("harbour", "properties", 0)
	before = fb.Calls()
	get(shared, "GET", "harbour", "/au/properties.json?detail=full")
	if fb.Calls()-before != 1 {
		t.Errorf("after a purge: %d calls, want 1", fb.Calls()-before)
	}
}

// TestSharedFetchAge: a variant rendered later from a kept fetch is as old
// as the fetch (its Age counts from the fetch), not fresh.
func TestSharedFetchAge(t *testing.T) {
	fb := newFake()
	clk := newClock()
	c, err := cache.New(cache.Options{MaxBytes: 64 << 20, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	s, err := proxy.New(testUsers(), []proxy.Tenant{
		{Name: "harbour", Backend: fb, BackendName: "fake", Upstream: "harbour", ShareFetch: true},
		{Name: "summit", Backend: fb, BackendName: "fake", Upstream: "summit", ShareFetch: true},
	}, proxy.Options{Cache: c, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	if w := get(s, "GET", "harbour", "/au/properties.xml?detail=full"); w.Code != http.StatusOK {
		t.Fatalf("first variant: %d", w.Code)
	}
	clk.Advance(30 * time.Second)
	get(s, "GET", "harbour", "/au/properties.json?detail=full")      // a miss: rendered from the kept fetch
	w := get(s, "GET", "harbour", "/au/properties.json?detail=full") // a hit on that body
	if got := w.Header().Get("Age"); got != "30" {
		t.Errorf("second variant, rendered 30s after the fetch: Age %q, want 30 (the fetch's age)", got)
	}
	if fb.Calls() != 1 {
		t.Errorf("%d backend calls, want 1", fb.Calls())
	}
}

// TestSharedFetchCacheStatus: a variant rendered from a fetch the cache
// already holds (another format or permission level of the same request)
// is labelled a hit ("detail=shared-fetch", outcome "shared-fetch"), not a
// miss: no backend call was made for it. The first variant, another
// tenant's same request and a request after a purge are misses; a stored
// variant asked again is a plain hit.
func TestSharedFetchCacheStatus(t *testing.T) {
	fb := newFake()
	var outcomes []string
	s, err := proxy.New(testUsers(), []proxy.Tenant{
		{Name: "harbour", Backend: fb, BackendName: "fake", Upstream: "harbour", ShareFetch: true},
		{Name: "summit", Backend: fb, BackendName: "fake", Upstream: "summit", ShareFetch: true},
	}, proxy.Options{Cache: newCache(t), Now: func() time.Time { return fixedNow },
		Observe: func(_ http.ResponseWriter, i proxy.RequestInfo) { outcomes = append(outcomes, i.Cache) }})
	if err != nil {
		t.Fatal(err)
	}
	const miss, held, hit = "listingproxy; fwd=miss; stored", "listingproxy; hit; detail=shared-fetch", "listingproxy; hit"
	steps := []struct {
		user, target, status, outcome string
		calls                         int64 // backend calls so far
	}{
		{"harbour", "/au/properties.xml?detail=full", miss, "miss", 1},
		{"harbour", "/au/properties.json?detail=full", held, "shared-fetch", 1},
		{"harbour-noprice", "/au/properties.xml?detail=full", held, "shared-fetch", 1},
		{"harbour", "/au/properties.json?detail=full", hit, "hit", 1},
		{"summit", "/au/properties.json?detail=full", miss, "miss", 2},
		{"harbour", "/au/properties/1.json", miss, "miss", 3},
		{"harbour-noprice", "/au/properties/1.json", held, "shared-fetch", 3},
		{"harbour", "/au/properties/99.xml", miss, "miss", 4}, // not found, kept as an answer
		{"harbour", "/au/properties/99.json", held, "shared-fetch", 4},
	}
	for i, st := range steps {
		w := get(s, "GET", st.user, st.target, "Accept-Encoding", "gzip")
		if got := w.Header().Get("Cache-Status"); got != st.status {
			t.Errorf("%d: %s as %s: Cache-Status %q, want %q", i, st.target, st.user, got, st.status)
		}
		if got := outcomes[len(outcomes)-1]; got != st.outcome {
			t.Errorf("%d: %s as %s: outcome %q, want %q", i, st.target, st.user, got, st.outcome)
		}
		if st.status == held && w.Header().Get("Age") == "" {
			t.Errorf("%d: %s: a body from a held fetch has no Age", i, st.target)
		}
		if got := fb.Calls(); got != st.calls {
			t.Errorf("%d: %s as %s: %d backend calls, want %d", i, st.target, st.user, got, st.calls)
		}
	}
}
