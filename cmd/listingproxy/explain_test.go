package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"listingproxy/proxy"
)

// operatorGet makes an operator's GET of path on the admin listener.
func operatorGet(a *app, path string, auth bool) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", path, nil)
	if auth {
		r.SetBasicAuth("admin", "admin-demo")
	}
	w := httptest.NewRecorder()
	a.admin.ServeHTTP(w, r)
	return w
}

// explain returns GET /cache/explain's answer for user's target.
func explain(t *testing.T, a *app, user, target string) proxy.Explanation {
	t.Helper()
	w := operatorGet(a, "/cache/explain?user="+url.QueryEscape(user)+"&url="+url.QueryEscape(target), true)
	var x proxy.Explanation
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("explain %s %s: %d %s", user, target, w.Code, w.Body)
	}
	if err := json.Unmarshal(w.Body.Bytes(), &x); err != nil {
		t.Fatalf("explain %s %s: %v\n%s", user, target, err, w.Body)
	}
	return x
}

// keysOf lists every key of tenant through GET /cache/keys, a page of
// limit at a time.
func keysOf(t *testing.T, a *app, tenant string, limit string) []proxy.ListedKey {
	t.Helper()
	var all []proxy.ListedKey
	after := ""
	for range 10 {
		w := operatorGet(a, "/cache/keys?tenant="+tenant+"&limit="+limit+"&after="+url.QueryEscape(after), true)
		var page proxy.KeyPage
		if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &page) != nil || page.Tenant != tenant {
			t.Fatalf("keys of %s after %q: %d %s", tenant, after, w.Code, w.Body)
		}
		all = append(all, page.Keys...)
		if page.Next == "" {
			return all
		}
		after = page.Next
	}
	t.Fatalf("keys of %s: more than 10 pages", tenant)
	return nil
}

// TestCacheExplainAndKeys, through the public and admin HTTP surfaces:
// every user's request is its own key (tenant and permission class), the
// keys listed for a tenant are its own only, an explanation names the key,
// its tags, the tier holding it, its age and TTL left and why the next
// request would miss (never filled, purged by what), and bad input is a
// 400 saying what is wrong.
func TestCacheExplainAndKeys(t *testing.T) {
	a := newDemoApp(t)
	const full = "/au/properties.json?limit=2&detail=full"
	const short = "/au/properties.json?limit=2"
	requests := []struct{ user, target, perms string }{
		{"harbour", full, "full+prices"}, {"harbour-noprice", full, "full"}, {"harbour-short", short, "none"}, {"summit", full, "full+prices"},
	}
	bodies := map[string]string{}
	for _, r := range requests {
		if w := demoGet(t, a.handler, r.user, r.target); w.Code != 200 || !strings.Contains(w.Header().Get("Cache-Status"), "miss") {
			t.Fatalf("%s %s: %d %q", r.user, r.target, w.Code, w.Header().Get("Cache-Status"))
		}
		w := demoGet(t, a.handler, r.user, r.target)
		if w.Header().Get("Cache-Status") != "listingproxy; hit" {
			t.Fatalf("%s %s again: Cache-Status %q, want a hit", r.user, r.target, w.Header().Get("Cache-Status"))
		}
		bodies[r.user] = w.Body.String()
	}
	if bodies["harbour"] == bodies["harbour-noprice"] || bodies["harbour"] == bodies["summit"] {
		t.Error("two users of different permissions or tenants were served one body")
	}

	keys := map[string]string{} // user -> key
	for _, r := range requests {
		x := explain(t, a, r.user, r.target)
		tenant, _, _ := strings.Cut(r.user, "-")
		if x.Tenant != tenant || x.Permissions != r.perms || x.Tier != "first" || x.Next != "hit" || x.From != "first" || x.Why != "" ||
			x.First == nil || x.First.State != "fresh" || x.AgeSeconds == nil || x.TTLLeftSeconds == nil || *x.TTLLeftSeconds <= 0 || x.Country != "au" || x.Format != "json" {
			t.Errorf("explain %s %s: %+v; want %s's %s key held fresh in the first tier", r.user, r.target, x, tenant, r.perms)
		}
		if !slices.ContainsFunc(x.Tags, func(tg proxy.ExplainedTag) bool { return strings.HasPrefix(tg.Name, "url properties au ") }) || len(x.Tags) < 3 {
			t.Errorf("explain %s: tags %+v; want the url's and the listed properties'", r.user, x.Tags)
		}
		keys[r.user] = x.Key
	}
	if len(slices.Compact(slices.Sorted(func(yield func(string) bool) {
		for _, k := range keys {
			yield(k)
		}
	}))) != len(requests) {
		t.Errorf("keys %v: want one per user (tenant and permission class)", keys)
	}

	for _, limit := range []string{"1", "100"} {
		listed := keysOf(t, a, "harbour", limit)
		var got []string
		for _, k := range listed {
			if !strings.HasPrefix(k.Key, "harbour|") || k.Bytes == 0 {
				t.Errorf("listed for harbour: %+v", k)
			}
			got = append(got, k.Key)
		}
		want := []string{keys["harbour"], keys["harbour-noprice"], keys["harbour-short"]}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("harbour's keys, %s a page: %q, want %q (never summit's %q)", limit, got, want, keys["summit"])
		}
	}
	if listed := keysOf(t, a, "summit", "10"); len(listed) != 1 || listed[0].Key != keys["summit"] || listed[0].Permissions != "full+prices" {
		t.Errorf("summit's keys: %+v, want its one key", listed)
	}

	if x := explain(t, a, "harbour", "/au/properties.json?limit=7"); x.Tier != "none" || x.Next != "miss" || x.From != "backend" ||
		x.First != nil || x.AgeSeconds != nil || !strings.Contains(x.Why, "never filled") || len(x.Tags) != 1 {
		t.Errorf("explain of a URL never asked: %+v; want none held, a miss, never filled, the url's tag", x)
	}
	if w := adminPurge(a, "tenant=harbour&url="+url.QueryEscape(full), "admin", "admin-demo"); w.Code != 200 || strings.TrimSpace(w.Body.String()) != "purged tenant=harbour url="+full+" mode=soft matched=2" {
		t.Fatalf("purge: %d %q, want matched=2 (harbour's and harbour-noprice's bodies)", w.Code, w.Body)
	}
	x := explain(t, a, "harbour", full)
	if x.Tier != "first" || x.First.Purged != "soft" || x.Next != "miss" || !strings.Contains(x.Why, "purged (soft)") ||
		x.Purge == nil || x.Purge.Mode != "soft" || !strings.HasPrefix(x.Purge.Scope, "tenant=harbour tags=1") {
		t.Errorf("explain after a soft purge by url: %+v (purge %+v); want purged soft, by that purge", x, x.Purge)
	}
	for _, k := range keysOf(t, a, "harbour", "100") {
		if want := map[bool]string{true: "soft"}[k.Key == keys["harbour"] || k.Key == keys["harbour-noprice"]]; k.Purged != want {
			t.Errorf("listed after the purge by url: %s purged %q, want %q", k.Key, k.Purged, want)
		}
	}
	if x := explain(t, a, "harbour-short", short); x.Next != "hit" || x.First.Purged != "" {
		t.Errorf("explain of another URL after the purge: %+v; want a hit, untouched", x)
	}
	if x := explain(t, a, "summit", full); x.Next != "hit" || x.Purge != nil {
		t.Errorf("explain of summit's key after harbour's purge: %+v; want a hit, no purge", x)
	}

	for _, tc := range []struct {
		path   string
		auth   bool
		status int
		body   string
	}{
		{"/cache/explain?user=harbour&url=" + url.QueryEscape(full), false, 401, "admin credentials required"},
		{"/cache/explain?user=nobody&url=" + url.QueryEscape(full), true, 400, `unknown user "nobody"`},
		{"/cache/explain?user=harbour&url=%2Fau%2Fhouses.json", true, 400, `url "/au/houses.json" is not a GET of one of the API's paths`},
		{"/cache/explain?user=harbour&url=" + url.QueryEscape("/au/properties.json?limit=abc"), true, 400, "the API answers it with the error list"},
		{"/cache/explain?user=harbour-short&url=" + url.QueryEscape(full), true, 400, "the API answers it with the error list"},
		{"/cache/explain?user=harbour-short&url=%2Fau%2Fproperties%2F1.json", true, 400, "the API answers it with an error"},
		{"/cache/explain?user=harbour&url=%2Fxx%2Fproperties.json", true, 400, "unknown country"},
		{"/cache/keys?tenant=nobody", true, 400, `unknown tenant "nobody"`},
		{"/cache/keys?tenant=harbour&after=" + url.QueryEscape(keys["summit"]), true, 400, "is not a key of tenant harbour"},
		{"/cache/keys?tenant=harbour&limit=5000", true, 400, `limit "5000" is not a whole number from 1 to 1000`},
	} {
		if w := operatorGet(a, tc.path, tc.auth); w.Code != tc.status || !strings.Contains(w.Body.String(), tc.body) {
			t.Errorf("GET %s: %d %q, want %d with %q", tc.path, w.Code, w.Body, tc.status, tc.body)
		}
	}
}

// TestExplainSharedFetch: for a CRM tenant, whose one backend call serves
// every format and permission level of a request, an explanation also
// explains the shared fetch the body is rendered from (its own key, in the
// tenant's scope); an SQL tenant's has none.
func TestExplainSharedFetch(t *testing.T) {
	crm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	defer crm.Close()
	a := crmDemoApp(t, crm.URL)
	const target = "/au/properties.json?limit=2"
	x := explain(t, a, "summit", target)
	if f := x.SharedFetch; f == nil || !strings.HasPrefix(f.Key, "summit|properties|fetch|au|") || f.Criteria != x.Criteria ||
		f.Format != "xml" || f.Tenant != "summit" || f.Tier != "none" || f.Next != "miss" || x.Tier != "none" {
		t.Errorf("summit (CRM) %s: %+v, shared fetch %+v; want the fetch's own key, none held", target, x, x.SharedFetch)
	}
	if x := explain(t, a, "harbour", target); x.SharedFetch != nil {
		t.Errorf("harbour (SQL) %s: shared fetch %+v, want none", target, x.SharedFetch)
	}
}
