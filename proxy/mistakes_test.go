package proxy_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"listingproxy/cache"
	"listingproxy/proxy"
)

// TestClientMistakes, through the HTTP surface: a list request's unknown
// parameters are ignored and reported (labelled by the spec's parameter
// names, else "other"), also on a cache hit whose query the memo holds;
// criteria errors are reported by parameter; a tenant with StrictParams
// gets the spec's error list naming each unknown parameter (with the
// parameter meant, for a typo), after the other errors, in both formats,
// even for a query another tenant's request left in the memo.
func TestClientMistakes(t *testing.T) {
	fb := newFake()
	st, err := cache.New(cache.Options{Now: func() time.Time { return fixedNow }})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var mu sync.Mutex
	var seen []proxy.RequestInfo
	s, err := proxy.New(testUsers(), []proxy.Tenant{
		{Name: "harbour", Backend: fb, BackendName: "fake", Upstream: "harbour"},
		{Name: "summit", Backend: fb, BackendName: "fake", Upstream: "summit", StrictParams: true},
	}, proxy.Options{Cache: st, Now: func() time.Time { return fixedNow }, Observe: func(_ http.ResponseWriter, i proxy.RequestInfo) {
		mu.Lock()
		seen = append(seen, i)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	type report struct {
		Cache            string
		Criteria, Params []string
	}
	for _, tc := range []struct {
		name, user, target string
		body               []string // substrings of the body
		want               report
	}{
		{"unknown, ignored", "harbour", "/au/properties.json?statuss=current&bedrooms=3",
			[]string{`"properties"`, `"count":"2"`}, report{"miss", nil, []string{"other"}}},
		{"unknown, ignored, a hit", "harbour", "/au/properties.json?statuss=current&bedrooms=3",
			[]string{`"count":"2"`}, report{"hit", nil, []string{"other"}}},
		{"another list's parameter", "harbour", "/au/agents.xml?bedrooms=3&name=jane",
			[]string{`<agents count="1">`}, report{"miss", nil, []string{"bedrooms"}}},
		{"criteria errors", "harbour", "/au/properties.xml?bedrooms=x&geo[lat]=1&price_from=y&price_to=z",
			[]string{`<errors count="5">`, `field="bedrooms"`, `field="geo[long]"`, `field="geo[rad]"`}, report{"", []string{"price_from", "price_to", "bedrooms", "geo"}, nil}},
		{"detail without permission", "harbour-short", "/au/properties.xml?detail=full",
			[]string{`<error field="detail">`}, report{"", []string{"detail"}, nil}},
		{"strict: a typo", "summit", "/au/properties.xml?statuss=current",
			[]string{`<errors count="1">`, `<error field="statuss">Unknown parameter "statuss" (did you mean "status"?)</error>`}, report{"", []string{"other"}, []string{"other"}}},
		{"strict: the memo's query, JSON", "summit", "/au/properties.json?statuss=current&bedrooms=3",
			[]string{`{"errors":{"count":"1","error":{"field":"statuss","message":"Unknown parameter \"statuss\" (did you mean \"status\"?)"}}}`}, report{"", []string{"other"}, []string{"other"}}},
		{"strict: after the other errors", "summit", "/au/agents.xml?limit=x&bedrooms=2&zz=1",
			[]string{`<errors count="3">`, "<error field=\"limit\">Invalid limit \"x\"", `<error field="bedrooms">Unknown parameter "bedrooms": the agents list does not take it</error>
  <error field="zz">Unknown parameter "zz": the agents list does not take it</error>`},
			report{"", []string{"limit", "bedrooms", "other"}, []string{"bedrooms", "other"}}},
		{"strict: none unknown", "summit", "/au/properties.json?status=current",
			[]string{`"properties"`}, report{"miss", nil, nil}},
	} {
		mu.Lock()
		seen = nil
		mu.Unlock()
		w := get(s, "GET", tc.user, tc.target)
		if w.Code != http.StatusOK {
			t.Errorf("%s: status %d, want 200", tc.name, w.Code)
		}
		for _, b := range tc.body {
			if !strings.Contains(w.Body.String(), b) {
				t.Errorf("%s: body %s lacks %s", tc.name, w.Body, b)
			}
		}
		mu.Lock()
		if len(seen) != 1 {
			t.Fatalf("%s: observed %d requests, want 1", tc.name, len(seen))
		}
		got := report{seen[0].Cache, seen[0].CriteriaErrors, seen[0].UnknownParams}
		mu.Unlock()
		if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: reported (-want +got):\n%s", tc.name, diff)
		}
	}
}
