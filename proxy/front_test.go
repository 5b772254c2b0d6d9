package proxy_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"listingproxy/cache"
	"listingproxy/proxy"
)

// TestFrontNeverSharesAcrossCallers repeats one request target as every
// user, concurrently, so that most answers come from the front memo
// (counted): each tenant and permission level gets its own body, as
// without a cache, including users whose tenant and permissions are the
// same (their entries lead to one cached item), and the front answers
// the method, encodings and conditionals of each request, not of the one
// that made the entry.
func TestFrontNeverSharesAcrossCallers(t *testing.T) {
	fronts := proxy.CountFrontHits(t)
	c := newCache(t)
	s := newServer(t, newFake(), proxy.Options{Cache: c})
	targets := []string{"/au/properties.xml?detail=full", "/au/properties.json?detail=full&order=price", "/au/properties/1.xml"}
	users := []string{"harbour", "harbour-2", "harbour-noprice", "summit"}
	want := map[string]string{}
	for _, u := range users {
		uncached := newServer(t, newFake(), proxy.Options{})
		for _, target := range targets {
			want[u+" "+target] = get(uncached, "GET", u, target).Body.String()
		}
	}
	if want["harbour "+targets[0]] == want["harbour-noprice "+targets[0]] || want["harbour "+targets[0]] == want["summit "+targets[0]] {
		t.Fatal("fixture bodies must differ between tenants and permission levels")
	}
	// Each caller's entries first, one request at a time: a fill, then a
	// fresh hit of the full path, which makes the front entry. (Made
	// concurrently, every request may wait on the one fill and none make
	// an entry.) Then every concurrent request below is a front answer.
	for _, u := range users {
		for _, target := range targets {
			get(s, "GET", u, target)
			c.Wait()
			get(s, "GET", u, target)
		}
	}
	before := fronts.Load()
	var wg sync.WaitGroup
	for range 10 {
		for _, u := range users {
			for _, target := range targets {
				wg.Go(func() {
					if got := get(s, "GET", u, target).Body.String(); got != want[u+" "+target] {
						t.Errorf("user %s, %s: got another body:\n%s", u, target, got)
					}
				})
			}
		}
	}
	wg.Wait()
	if got, n := fronts.Load()-before, int64(10*len(users)*len(targets)); got != n {
		t.Fatalf("%d of %d concurrent requests were answered from the front memo: the test does not test it", got, n)
	}

	// The same target as HEAD, with gzip, and conditionally, after GETs
	// made its entry.
	const target = "/au/properties.xml?detail=full"
	before = fronts.Load()
	full := get(s, "GET", "harbour", target)
	head := get(s, "HEAD", "harbour", target)
	if head.Code != http.StatusOK || head.Body.Len() != 0 || head.Header().Get("Content-Length") != full.Header().Get("Content-Length") {
		t.Errorf("HEAD from the front: %d, %d body bytes, Content-Length %q; want 200, none, %q",
			head.Code, head.Body.Len(), head.Header().Get("Content-Length"), full.Header().Get("Content-Length"))
	}
	if gz := get(s, "GET", "harbour", target, "Accept-Encoding", "gzip"); gz.Header().Get("Content-Encoding") != "gzip" {
		t.Errorf("gzip from the front: Content-Encoding %q", gz.Header().Get("Content-Encoding"))
	}
	if nm := get(s, "GET", "harbour", target, "If-None-Match", full.Header().Get("ETag")); nm.Code != http.StatusNotModified {
		t.Errorf("If-None-Match from the front: %d, want 304", nm.Code)
	}
	if got := fronts.Load() - before; got != 4 {
		t.Errorf("front answers = %d of 4 repeated requests", got)
	}
}

// TestFrontRefusalsTakeTheFullPath: a request the full path refuses is
// refused every time, with its own error, however often it repeats
// (nothing refused makes a front entry), and a caller without a
// permission never gets the answer another caller's entry holds for the
// same target.
func TestFrontRefusalsTakeTheFullPath(t *testing.T) {
	fronts := proxy.CountFrontHits(t)
	s := newServer(t, newFake(), proxy.Options{Cache: newCache(t)})
	for range 3 {
		if w := get(s, "GET", "harbour", "/au/properties.xml?detail=full"); w.Code != http.StatusOK {
			t.Fatalf("harbour: %d", w.Code)
		}
	}
	uncached := newServer(t, newFake(), proxy.Options{})
	for i := range 3 {
		for _, c := range []struct{ user, target, says string }{
			{"harbour-short", "/au/properties.xml?detail=full", `field="detail"`},
			{"harbour", "/xx/properties.xml?detail=full", "Unknown country"},
			{"harbour", "/au/properties.xml?limit=nope", `field="limit"`},
			{"", "/au/properties.xml?detail=full", ""},
		} {
			want := get(uncached, "GET", c.user, c.target)
			w := get(s, "GET", c.user, c.target)
			if w.Code != want.Code || w.Body.String() != want.Body.String() || !strings.Contains(w.Body.String(), c.says) {
				t.Errorf("round %d: %q %s = %d:\n%s\nwant %d (saying %s):\n%s", i, c.user, c.target, w.Code, w.Body.String(), want.Code, c.says, want.Body.String())
			}
		}
	}
	if fronts.Load() == 0 {
		t.Error("harbour's repeats were not answered from the front memo")
	}
}

// TestFrontAfterPurgeExpiryAndReload: after a purge (of any scope), past
// the entry's TTL, and after a reload that takes a user's permission away,
// the front memo's entry is not used: the answer is the full path's.
func TestFrontAfterPurgeExpiryAndReload(t *testing.T) {
	fronts := proxy.CountFrontHits(t)
	clk := fixedNow
	now := func() time.Time { return clk }
	c, err := cache.New(cache.Options{MaxBytes: 64 << 20, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	fb := newFake()
	s := newServer(t, fb, proxy.Options{Cache: c, Now: now})
	const target = "/au/properties.xml?detail=full"
	warm := func(what string) string {
		t.Helper()
		var body string
		for range 3 {
			body = get(s, "GET", "harbour", target).Body.String()
		}
		if n := fronts.Swap(0); n == 0 {
			t.Fatalf("%s: repeats not answered from the front memo", what)
		}
		return body
	}
	rename := func(street string) {
		props := fb.Properties["harbour/au"]
		props[0].StreetName = street
	}

	old := warm("before the purge")
	rename("Renamed Street")
	c.Purge("harbour", "", cache.Hard)
	if got := get(s, "GET", "harbour", target).Body.String(); got == old || !strings.Contains(got, "Renamed Street") {
		t.Errorf("after a hard purge: the old body, or not the new one:\n%s", got)
	}
	old = warm("before the soft purge")
	rename("Soft Street")
	c.PurgeTags("harbour", []cache.Tag{proxy.PropertyTag(1)}, cache.Soft)
	if got := get(s, "GET", "harbour", target).Body.String(); got == old || !strings.Contains(got, "Soft Street") {
		t.Errorf("after a purge by tags: not the new body:\n%s", got)
	}

	warm("before the expiry")
	rename("Later Street")
	clk = clk.Add(proxy.DefaultPolicy.TTL + proxy.DefaultPolicy.StaleWhileRevalidate + proxy.DefaultPolicy.StaleIfError + time.Minute)
	if got := get(s, "GET", "harbour", target); got.Header().Get("Cache-Status") == "listingproxy; hit" || !strings.Contains(got.Body.String(), "Later Street") {
		t.Errorf("past the entry's life: %q, body:\n%s", got.Header().Get("Cache-Status"), got.Body.String())
	}

	warm("before the reload")
	users := testUsers()
	for i := range users {
		if users[i].Username == "harbour" {
			users[i].Permissions = 0
		}
	}
	if proxy.FrontLen(s) == 0 {
		t.Fatal("no front entries before the reload")
	}
	if err := s.Reload(users, proxy.ReloadOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := proxy.FrontLen(s); n != 0 {
		t.Errorf("front memo holds %d entries after the reload, want none (their principals are gone)", n)
	}
	if w := get(s, "GET", "harbour", target); !strings.Contains(w.Body.String(), `<error field="detail">`) {
		t.Errorf("after the reload took detail=full away: %d, want the detail error:\n%s", w.Code, w.Body.String())
	}
	if n := fronts.Load(); n != 0 {
		t.Errorf("%d answers from the front memo after the reload, want none", n)
	}
}

// TestFrontBeforeRouting: a repeated hit answered from the front memo
// (before the routing) names its route and its caller as the full path's
// hit did: the same request pattern (the metrics' route label), the same
// RequestInfo, status, headers and body. Through a connection's memo of
// its credentials (ConnContext) and without one.
func TestFrontBeforeRouting(t *testing.T) {
	fronts := proxy.CountFrontFirst(t)
	var seen []proxy.RequestInfo
	c := newCache(t)
	s := newServer(t, newFake(), proxy.Options{Cache: c, Observe: func(_ http.ResponseWriter, i proxy.RequestInfo) {
		seen = append(seen, i)
	}})
	type answer struct {
		Pattern string
		Info    proxy.RequestInfo
		Code    int
		Header  http.Header
		Body    string
	}
	do := func(ctx context.Context, user, target string) answer {
		r := httptest.NewRequest("GET", target, nil).WithContext(ctx)
		r.Header.Set("Authorization", basic(user))
		w := httptest.NewRecorder()
		seen = seen[:0]
		s.ServeHTTP(w, r)
		if len(seen) != 1 {
			t.Fatalf("%s %s: %d observations", user, target, len(seen))
		}
		return answer{r.Pattern, seen[0], w.Code, w.Header(), w.Body.String()}
	}
	for _, conn := range []bool{false, true} {
		for _, target := range []string{"/au/properties.xml?detail=full&unknown=1", "/au/agents.json", "/au/properties/1.xml", "/au/agents/5.json"} {
			for _, user := range []string{"harbour", "harbour-noprice"} {
				ctx := context.Background()
				if conn {
					ctx = proxy.ConnContext(ctx, nil)
				}
				do(ctx, user, target) // fill
				c.Wait()
				before := fronts.Load()
				full := do(ctx, user, target)  // a hit of the full path: makes the front entry
				front := do(ctx, user, target) // the front's
				if got := fronts.Load() - before; got != 1 {
					t.Fatalf("%s %s (connection memo %v): %d answers before the routing of 2 repeats, want the second", user, target, conn, got)
				}
				if full.Pattern == "" || full.Info.Cache != "hit" {
					t.Fatalf("%s %s: the second request was no hit of a route (pattern %q, %+v)", user, target, full.Pattern, full.Info)
				}
				if diff := cmp.Diff(full, front); diff != "" {
					t.Errorf("%s %s (connection memo %v): front answer differs from the full path's (-full +front):\n%s", user, target, conn, diff)
				}
			}
		}
		c.PurgeAll(cache.Hard)
	}
}
