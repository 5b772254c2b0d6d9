package proxy_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"listingproxy/proxy"
)

// TestMaxOffset: past max_offset a list is the spec's error list on offset
// (HTTP 200, as every criteria error), in both formats and at every
// permission level, and the backend is not called; up to it, and for a
// tenant without the cap, the list is served. The same URL is asked in an
// order that would leak through a shared cache entry or criteria memo:
// the uncapped tenant first (its clean criteria are memoised and its body
// cached), then the capped tenant's users, then the uncapped tenant again
// (a hit), then the capped again.
func TestMaxOffset(t *testing.T) {
	fb := newFake()
	s, err := proxy.New(testUsers(), []proxy.Tenant{
		{Name: "harbour", Backend: fb, BackendName: "fake", Upstream: "harbour"},
		{Name: "summit", Backend: fb, BackendName: "fake", Upstream: "summit", MaxOffset: -1},
	}, proxy.Options{MaxOffset: 100, Cache: newCache(t), Now: func() time.Time { return fixedNow }})
	if err != nil {
		t.Fatal(err)
	}
	const deep = "/au/properties.json?offset=101"
	const refused = `{"errors":{"count":"1","error":{"field":"offset","message":"Invalid offset \"101\": must be a whole number from 0 to 100"}}}` + "\n"
	list := func(user, target string) string {
		t.Helper()
		w := get(s, "GET", user, target)
		if w.Code != 200 {
			t.Fatalf("%s %s: status %d, want 200", user, target, w.Code)
		}
		return w.Body.String()
	}

	uncapped := list("summit", deep)
	if uncapped == refused || fb.Calls() != 1 {
		t.Fatalf("uncapped tenant: %d backend calls, body %s; want its list from 1 call", fb.Calls(), uncapped)
	}
	for round := range 2 {
		for _, u := range []string{"harbour", "harbour-noprice", "harbour-short"} {
			if diff := cmp.Diff(refused, list(u, deep)); diff != "" {
				t.Errorf("round %d, %s (-want +got):\n%s", round, u, diff)
			}
		}
		if got := list("summit", deep); got != uncapped {
			t.Errorf("round %d: the uncapped tenant's list changed:\n%s", round, got)
		}
	}
	if got := fb.Calls(); got != 1 {
		t.Errorf("backend calls = %d, want 1 (a refused offset never reaches the backend; the uncapped list is a hit)", got)
	}

	xml := get(s, "GET", "harbour", "/au/agents.xml?offset=5000&limit=5").Body.String()
	wantXML := xmlHeader + `<errors count="1">
  <error field="offset">Invalid offset "5000": must be a whole number from 0 to 100</error>
</errors>
`
	if diff := cmp.Diff(wantXML, xml); diff != "" {
		t.Errorf("agents.xml past the cap (-want +got):\n%s", diff)
	}
	if got := list("harbour", "/au/properties.json?offset=100"); got == refused || fb.Calls() != 2 {
		t.Errorf("offset at the cap: %d backend calls, body %s; want the list", fb.Calls(), got)
	}
}
