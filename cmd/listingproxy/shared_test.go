package main

import (
	"crypto/rand"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"listingproxy/config"
	"listingproxy/internal/testkit"
)

// fleetApps wires two replicas of the demo configuration sharing the test
// Redis under a key prefix of their own (cache.shared), or skips.
func fleetApps(t *testing.T) (a, b *app) {
	t.Helper()
	apps := fleetOf(t, 2)
	return apps[0], apps[1]
}

// fleetOf wires n replicas as fleetApps does.
func fleetOf(t *testing.T, n int) []*app {
	t.Helper()
	addr := os.Getenv("LISTINGPROXY_TEST_REDIS_ADDR")
	if addr == "" {
		t.Skip("LISTINGPROXY_TEST_REDIS_ADDR is not set: set it to a Redis host:port (CI does) to run the fleet tests")
	}
	path := sharedDemoConfig(t, addr)
	apps := make([]*app, n)
	for i := range apps {
		apps[i] = newAppFrom(t, path) // the first seeds the demo database
		// A replica serves nothing from Redis until it has read the
		// fleet's purges.
		testkit.WaitFor(t, "the replica to read the fleet's purges", apps[i].shared.Synced)
	}
	return apps
}

// TestFleetSharesBodiesAndPurges: through the HTTP surface of two
// replicas, one's fill is the other's hit with the same body and ETag; other
// tenants and permission levels get their own bodies; an admin purge on one
// replica reaches the other.
func TestFleetSharesBodiesAndPurges(t *testing.T) {
	a, b := fleetApps(t)
	const target = "/au/properties.json?limit=2"
	first := demoGet(t, a.handler, "harbour", target)
	if cs := first.Header().Get("Cache-Status"); !strings.Contains(cs, "miss") {
		t.Fatalf("replica a, first request: Cache-Status %q, want a miss", cs)
	}
	second := demoGet(t, b.handler, "harbour", target)
	type resp struct{ Status, CacheStatus, ETag, Body string }
	view := func(w *httptest.ResponseRecorder) resp {
		return resp{w.Result().Status, w.Header().Get("Cache-Status"), w.Header().Get("ETag"), w.Body.String()}
	}
	want := view(first)
	// Redis (listed first: nearer the origin) held it; b's memory did not.
	want.CacheStatus = "listingproxy-shared; hit, listingproxy; fwd=miss; stored"
	if diff := cmp.Diff(want, view(second)); diff != "" {
		t.Errorf("replica b, same request (-want +got):\n%s", diff)
	}
	// Another permission level or tenant is another key: its own fill,
	// never this body read through Redis.
	for _, user := range []string{"harbour-noprice", "summit"} {
		if cs := demoGet(t, b.handler, user, target).Header().Get("Cache-Status"); !strings.Contains(cs, "miss") {
			t.Errorf("%s on replica b: Cache-Status %q, want a miss (its own fill)", user, cs)
		}
	}
	if w := demoGet(t, a.handler, "summit", target); w.Body.String() == first.Body.String() {
		t.Error("summit was served harbour's body")
	}

	if w := adminPurge(b, "tenant=harbour&mode=hard", "admin", "admin-demo"); w.Code != 200 {
		t.Fatalf("purge on replica b: %d %q", w.Code, w.Body)
	}
	testkit.WaitFor(t, "the purge to reach replica a", func() bool { return a.cache.Stats().PurgesReceived >= 1 })
	if cs := demoGet(t, a.handler, "harbour", target).Header().Get("Cache-Status"); !strings.Contains(cs, "miss") {
		t.Errorf("replica a after the purge on b: Cache-Status %q, want a miss", cs)
	}
	if cs := demoGet(t, a.handler, "summit", target).Header().Get("Cache-Status"); cs != "listingproxy; hit" {
		t.Errorf("summit on replica a after harbour's purge: Cache-Status %q, want a hit (from the tier)", cs)
	}

	m := httptest.NewRecorder()
	a.admin.ServeHTTP(m, httptest.NewRequest("GET", "/metrics", nil))
	for _, name := range []string{"listingproxy_shared_cache_hits_total", "listingproxy_shared_cache_purges_received_total", "listingproxy_shared_cache_operation_seconds_bucket", "listingproxy_shared_cache_synced 1"} {
		if !strings.Contains(m.Body.String(), name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	req := httptest.NewRequest("GET", "/backends", nil)
	req.SetBasicAuth("admin", "admin-demo")
	bk := httptest.NewRecorder()
	a.admin.ServeHTTP(bk, req)
	if !strings.Contains(bk.Body.String(), `"shared_cache": {`) || !strings.Contains(bk.Body.String(), `"synced": true`) {
		t.Errorf("/backends lacks the shared tier's synced state:\n%s", bk.Body)
	}
}

// TestSharedTierChangeNeedsRestart: a reload does not swap the shared tier
// under a running cache; it says a restart is needed.
func TestSharedTierChangeNeedsRestart(t *testing.T) {
	cur, err := config.Load(demoConfig(t), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	next := *cur
	next.Cache.Shared = &config.SharedCache{Addrs: []string{"127.0.0.1:6379"}}
	if got := config.NeedsRestart(cur, &next); !slices.Contains(got, "cache.shared") {
		t.Errorf("NeedsRestart = %v, want cache.shared listed", got)
	}
	if got := config.WithFixed(&next, cur); got.Cache.Shared != nil {
		t.Error("WithFixed took the new cache.shared; want the one in force")
	}
}

// sharedDemoConfig is demoConfig with cache.shared on the Redis at addr,
// under a key prefix of the test's own.
func sharedDemoConfig(t *testing.T, addr string) string {
	t.Helper()
	path := demoConfig(t)
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	shared := "  fill_timeout: 10s\n  shared:\n    addrs: [\"" + addr + "\"]\n    key_prefix: \"lptest:" + rand.Text()[:10] + ":\"\n"
	s := strings.Replace(string(src), "  fill_timeout: 10s\n", shared, 1)
	if s == string(src) {
		t.Fatal("config.yaml has no cache.fill_timeout line to add cache.shared after")
	}
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
