package proxy_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"listingproxy/cache"
	"listingproxy/proxy"
)

var numericID = regexp.MustCompile(`"id":\d`)

// TestPerUserCompat: a tenant's client programs each get the switches of
// their own user (the tenant's when the user has none), and the cache key
// keeps them apart: a JSON body made under one set of switches is never
// served to a caller with another, whatever the order of the requests;
// XML, which no switch changes, is shared; tenants and permission levels
// stay apart as ever.
func TestPerUserCompat(t *testing.T) {
	fb := newFake()
	c, err := cache.New(cache.Options{MaxBytes: 16 << 20, Now: func() time.Time { return fixedNow }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	users := []proxy.User{
		{Username: "ci-app", PasswordHash: testHash, Tenant: "harbour", Permissions: proxy.PermFull | proxy.PermPrices,
			Compat: &proxy.Compat{NumericIDs: true, SingleObject: true}},
		{Username: "ts-service", PasswordHash: testHash, Tenant: "harbour", Permissions: proxy.PermFull | proxy.PermPrices,
			Compat: &proxy.Compat{}},
		{Username: "harbour", PasswordHash: testHash, Tenant: "harbour", Permissions: proxy.PermFull | proxy.PermPrices}, // the tenant's
		{Username: "harbour-noprice", PasswordHash: testHash, Tenant: "harbour", Permissions: proxy.PermFull,
			Compat: &proxy.Compat{NumericIDs: true, SingleObject: true}},
		{Username: "summit", PasswordHash: testHash, Tenant: "summit", Permissions: proxy.PermFull | proxy.PermPrices,
			Compat: &proxy.Compat{NumericIDs: true, SingleObject: true}},
	}
	s, err := proxy.New(users, []proxy.Tenant{
		{Name: "harbour", Backend: fb, BackendName: "fake", Upstream: "harbour", JSONNumericIDs: true},
		{Name: "summit", Backend: fb, BackendName: "fake", Upstream: "summit"},
	}, proxy.Options{Cache: c, Now: func() time.Time { return fixedNow }})
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		numeric, single bool
	}
	check := func(user, target string, w want) string {
		t.Helper()
		rec := get(s, "GET", user, target)
		body := rec.Body.String()
		if rec.Code != 200 {
			t.Fatalf("%s %s: %d %s", user, target, rec.Code, body)
		}
		if got := numericID.MatchString(body); got != w.numeric {
			t.Errorf("%s %s: numeric ids %v, want %v: %s", user, target, got, w.numeric, body)
		}
		if strings.Contains(target, "agents") {
			if got := strings.Contains(body, `"agent":{`); got != w.single {
				t.Errorf("%s %s: single object %v, want %v: %s", user, target, got, w.single, body)
			}
		}
		return body
	}
	// Each order: the first caller fills, the second must not get its body.
	for _, target := range []string{"/au/properties/1.json", "/au/agents.json"} {
		ci := check("ci-app", target, want{true, true})
		ts := check("ts-service", target, want{false, false})
		hb := check("harbour", target, want{true, false})
		if ci == ts || ci == hb || ts == hb {
			t.Errorf("%s: two switch sets got the same body", target)
		}
		// Again, each from its own cache entry.
		for _, u := range []struct {
			user string
			body string
		}{{"ci-app", ci}, {"ts-service", ts}, {"harbour", hb}} {
			rec := get(s, "GET", u.user, target)
			if rec.Body.String() != u.body || !strings.Contains(rec.Header().Get("Cache-Status"), "hit") {
				t.Errorf("%s %s again: %s, its own body %v; want a hit with its own body", u.user, target, rec.Header().Get("Cache-Status"), rec.Body.String() == u.body)
			}
		}
		// Same switches, narrower permissions: its own body (no prices).
		if np := check("harbour-noprice", target, want{true, true}); strings.Contains(target, "properties") && (np == ci || strings.Contains(np, "650000")) {
			t.Errorf("%s: harbour-noprice got the prices of the full caller's body", target)
		}
		// Same switches, another tenant: its own data.
		if sm := get(s, "GET", "summit", target).Body.String(); sm == ci {
			t.Errorf("%s: summit got harbour's body", target)
		}
	}
	// XML has no switches: one body for every caller of a permission set.
	calls := fb.Calls()
	x1 := get(s, "GET", "ci-app", "/au/properties/2.xml")
	x2 := get(s, "GET", "ts-service", "/au/properties/2.xml")
	if x1.Body.String() != x2.Body.String() || fb.Calls() != calls+1 || !strings.Contains(x2.Header().Get("Cache-Status"), "hit") {
		t.Errorf("XML of two switch sets: same body %v, %d backend calls (want 1), second %s",
			x1.Body.String() == x2.Body.String(), fb.Calls()-calls, x2.Header().Get("Cache-Status"))
	}
}
