package main

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"listingproxy/config"
	"listingproxy/internal/testkit"
	"listingproxy/proxy"
)

// diskConfig is the demo configuration with cache.disk on a file of the
// test's own.
func diskConfig(t *testing.T) string {
	t.Helper()
	path := demoConfig(t)
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	disk := "  fill_timeout: 10s\n  disk:\n    path: \"" + filepath.ToSlash(filepath.Join(filepath.Dir(path), "cache.db")) + "\"\n    max_bytes: 64MiB\n"
	s := strings.Replace(string(src), "  fill_timeout: 10s\n", disk, 1)
	if s == string(src) {
		t.Fatal("config.yaml has no cache.fill_timeout line to add cache.disk after")
	}
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// diskApp wires the configuration at path on clock now: one process's
// life, ended with stopApp.
func diskApp(t *testing.T, path string, now func() time.Time) *app {
	t.Helper()
	cfg, err := config.Load(path, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	a, err := build(context.Background(), cfg, slog.New(slog.DiscardHandler), now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	if a.disk == nil {
		t.Fatal("cache.disk configured, no disk tier wired")
	}
	return a
}

// stopApp ends a process as a stop does: what the disk tier queued is
// written (Flush, then Close).
func stopApp(a *app) {
	a.disk.Flush()
	a.Close()
}

var diskTargets = []struct{ user, target string }{
	{"harbour", "/au/properties.json?limit=3&detail=full"},
	{"harbour-noprice", "/au/properties.json?limit=3&detail=full"},
	{"summit", "/au/properties.json?limit=3&detail=full"},
	{"harbour", "/au/properties.xml?limit=3&detail=full"},
	{"harbour", "/au/agents/1.json"},
}

// warm requests every target once and returns each answer's body.
func warm(t *testing.T, a *app) []string {
	t.Helper()
	bodies := make([]string, len(diskTargets))
	for i, d := range diskTargets {
		w := demoGet(t, a.handler, d.user, d.target)
		if w.Code != 200 {
			t.Fatalf("warming %s %s: %d %s", d.user, d.target, w.Code, w.Body)
		}
		bodies[i] = w.Body.String()
	}
	if bodies[0] == bodies[1] || bodies[0] == bodies[2] || bodies[1] == bodies[2] {
		t.Fatal("the three callers' bodies are not all different: the test would prove nothing")
	}
	return bodies
}

// TestDiskTierRestartServesWarmKeys, through the HTTP surface of the wired
// demo with cache.disk: a restarted process answers every key the last one
// filled at once, as hits, with no backend call, each caller (tenant,
// permission level, format) its own body; after another restart past ttl
// with the backend down (its breaker open), each is served its own body
// stale-if-error.
func TestDiskTierRestartServesWarmKeys(t *testing.T) {
	path := diskConfig(t)
	clock := testkit.NewClock(goldenNow)
	a := diskApp(t, path, clock.Now)
	bodies := warm(t, a)
	stopApp(a)

	b := diskApp(t, path, clock.Now)
	for i, d := range diskTargets {
		w := demoGet(t, b.handler, d.user, d.target)
		if w.Code != 200 || w.Header().Get("Cache-Status") != "listingproxy-disk; hit, listingproxy; fwd=miss; stored" || w.Body.String() != bodies[i] {
			t.Errorf("%s %s after the restart: %d %q; want its own body, a hit of the disk tier", d.user, d.target, w.Code, w.Header().Get("Cache-Status"))
		}
	}
	if s := b.cache.Stats(); s.LoaderCalls != 0 || s.SecondTierHits != uint64(len(diskTargets)) {
		t.Errorf("after the restart: %d backend calls, %d disk hits; want 0 and %d", s.LoaderCalls, s.SecondTierHits, len(diskTargets))
	}
	m := httptest.NewRecorder()
	b.admin.ServeHTTP(m, httptest.NewRequest("GET", "/metrics", nil))
	for _, name := range []string{"listingproxy_disk_cache_hits_total 5", "listingproxy_disk_cache_entries 5", "listingproxy_disk_cache_bytes"} {
		if !strings.Contains(m.Body.String(), name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	req := httptest.NewRequest("GET", "/backends", nil)
	req.SetBasicAuth("admin", "admin-demo")
	bk := httptest.NewRecorder()
	b.admin.ServeHTTP(bk, req)
	if !strings.Contains(bk.Body.String(), `"disk_cache": {`) || !strings.Contains(bk.Body.String(), `"entries": 5`) {
		t.Errorf("/backends lacks the disk tier's state:\n%s", bk.Body)
	}
	stopApp(b)

	clock.Advance(proxy.DefaultPolicy.TTL + proxy.DefaultPolicy.StaleWhileRevalidate + time.Second) // past ttl + stale_while_revalidate
	c := diskApp(t, path, clock.Now)
	tripBreaker(t, c, 5)
	for i, d := range diskTargets {
		w := demoGet(t, c.handler, d.user, d.target)
		if w.Code != 200 || w.Header().Get("Cache-Status") != "listingproxy-disk; hit; detail=stale-if-error, listingproxy; fwd=miss; stored" || w.Body.String() != bodies[i] {
			t.Errorf("%s %s after a restart, backend down: %d %q; want its own body, stale-if-error from the disk tier", d.user, d.target, w.Code, w.Header().Get("Cache-Status"))
		}
	}
}

// TestDiskTierPurgesSurviveRestart: purges made through the admin API (a
// tenant's soft purge, two URLs' hard purges, by tags) hold after a
// restart: with the backend down the soft-purged bodies are served only
// as stale-if-error (never as hits), each to its own caller, and the
// hard-purged ones not at all; with the backend up, every purged body is
// refilled.
func TestDiskTierPurgesSurviveRestart(t *testing.T) {
	path := diskConfig(t)
	clock := testkit.NewClock(goldenNow)
	a := diskApp(t, path, clock.Now)
	bodies := warm(t, a)
	for _, q := range []string{
		"tenant=harbour",
		"tenant=summit&mode=hard&url=" + url.QueryEscape("/au/properties.xml?limit=3&detail=full"),
		"tenant=harbour&mode=hard&url=" + url.QueryEscape("/au/agents/1.json"),
	} {
		if w := adminPurge(a, q, "admin", "admin-demo"); w.Code != 200 {
			t.Fatalf("purge %s: %d %s", q, w.Code, w.Body)
		}
	}
	stopApp(a)

	b := diskApp(t, path, clock.Now)
	tripBreaker(t, b, 5)
	for i, d := range diskTargets[:4] {
		w := demoGet(t, b.handler, d.user, d.target)
		want, cs := http.StatusOK, "listingproxy-disk; hit; detail=stale-if-error, listingproxy; fwd=miss; stored"
		if d.user == "summit" {
			want, cs = http.StatusServiceUnavailable, ""
		}
		if got := w.Header().Get("Cache-Status"); w.Code != want || got != cs || (w.Code == 200 && w.Body.String() != bodies[i]) {
			t.Errorf("%s %s after the purges and a restart, backend down: %d %q; want %d %q (its own body)", d.user, d.target, w.Code, got, want, cs)
		}
	}
	if w := demoGet(t, b.handler, "harbour", "/au/agents/1.json"); w.Code != http.StatusServiceUnavailable {
		t.Errorf("agent 1 (hard-purged) after a restart, backend down: %d %q; want 503", w.Code, w.Header().Get("Cache-Status"))
	}
	stopApp(b)

	c := diskApp(t, path, clock.Now)
	for _, d := range diskTargets {
		if w := demoGet(t, c.handler, d.user, d.target); w.Code != 200 || !strings.Contains(w.Header().Get("Cache-Status"), "miss") {
			t.Errorf("%s %s after the purges and a restart, backend up: %d %q; want a refill", d.user, d.target, w.Code, w.Header().Get("Cache-Status"))
		}
	}
}
