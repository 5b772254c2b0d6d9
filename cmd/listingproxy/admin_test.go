package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// adminPurge posts a purge to a's admin handler.
func adminPurge(a *app, query, user, pass string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("POST", "/cache/purge?"+query, nil)
	if user != "" {
		r.SetBasicAuth(user, pass)
	}
	w := httptest.NewRecorder()
	a.admin.ServeHTTP(w, r)
	return w
}

func TestAdminPurge(t *testing.T) {
	a := newDemoApp(t)
	const target = "/au/properties.json?limit=2"
	if cs := demoGet(t, a.handler, "harbour", target).Header().Get("Cache-Status"); !strings.Contains(cs, "miss") {
		t.Fatalf("first request Cache-Status %q, want a miss", cs)
	}
	if cs := demoGet(t, a.handler, "harbour", target).Header().Get("Cache-Status"); cs != "listingproxy; hit" {
		t.Fatalf("second request Cache-Status %q, want a hit", cs)
	}
	summitTarget := "/au/properties.json?limit=3"
	demoGet(t, a.handler, "summit", summitTarget)

	tests := []struct {
		name, query, user, pass string
		status                  int
		body                    string
	}{
		{"no credentials", "tenant=harbour", "", "", http.StatusUnauthorized, "admin credentials required"},
		{"wrong password", "tenant=harbour", "admin", "nope", http.StatusUnauthorized, "admin credentials required"},
		{"api user is not admin", "tenant=harbour", "harbour", "harbour-demo", http.StatusUnauthorized, "admin credentials required"},
		{"unknown tenant", "tenant=nobody", "admin", "admin-demo", http.StatusBadRequest, `unknown tenant "nobody"`},
		{"unknown resource", "tenant=harbour&resource=houses", "admin", "admin-demo", http.StatusBadRequest, `unknown resource "houses" (want properties, property, agents, agent)`},
		{"unknown mode", "tenant=harbour&mode=gentle", "admin", "admin-demo", http.StatusBadRequest, `unknown mode "gentle" (want soft, the default, or hard)`},
		{"purge harbour", "tenant=harbour", "admin", "admin-demo", http.StatusOK, "purged tenant=harbour resource=all mode=soft matched=1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := adminPurge(a, tt.query, tt.user, tt.pass)
			if w.Code != tt.status || strings.TrimSpace(w.Body.String()) != tt.body {
				t.Errorf("%d %q, want %d %q", w.Code, strings.TrimSpace(w.Body.String()), tt.status, tt.body)
			}
		})
	}
	if cs := demoGet(t, a.handler, "harbour", target).Header().Get("Cache-Status"); !strings.Contains(cs, "miss") {
		t.Errorf("after purge Cache-Status %q, want a miss (refreshed)", cs)
	}
	if cs := demoGet(t, a.handler, "summit", summitTarget).Header().Get("Cache-Status"); cs != "listingproxy; hit" {
		t.Errorf("other tenant after purge Cache-Status %q, want a hit (untouched)", cs)
	}
}

// TestAdminPurgeModesWhileTheBackendFails: with the breaker open, a
// soft-purged body is still served (stale-if-error) and a hard-purged one
// is gone (503); each caller gets only its own body: not the other tenant's,
// nor the other permission level's (harbour sees prices, harbour-noprice
// does not), and the other tenant's stays a hit.
func TestAdminPurgeModesWhileTheBackendFails(t *testing.T) {
	const target = "/au/properties.json?limit=3&detail=full"
	for _, tc := range []struct {
		mode         string
		status       int
		cacheStatus  string
		purgeMessage string
	}{
		{"", http.StatusOK, "listingproxy; hit; detail=stale-if-error", "mode=soft"},
		{"soft", http.StatusOK, "listingproxy; hit; detail=stale-if-error", "mode=soft"},
		{"hard", http.StatusServiceUnavailable, "", "mode=hard"},
	} {
		t.Run("mode="+tc.mode, func(t *testing.T) {
			a := newDemoApp(t)
			bodies := map[string]string{}
			for _, u := range []string{"harbour", "harbour-noprice", "summit"} {
				w := demoGet(t, a.handler, u, target)
				if w.Code != 200 {
					t.Fatalf("warming %s: %d", u, w.Code)
				}
				bodies[u] = w.Body.String()
			}
			if bodies["harbour"] == bodies["harbour-noprice"] || bodies["harbour"] == bodies["summit"] {
				t.Fatal("the three callers' bodies are not all different: the test would prove nothing")
			}
			tripBreaker(t, a, 5)
			q := "tenant=harbour"
			if tc.mode != "" {
				q += "&mode=" + tc.mode
			}
			if w := adminPurge(a, q, "admin", "admin-demo"); w.Code != 200 || !strings.Contains(w.Body.String(), tc.purgeMessage) {
				t.Fatalf("purge: %d %q", w.Code, w.Body)
			}
			for _, u := range []string{"harbour", "harbour-noprice"} {
				w := demoGet(t, a.handler, u, target)
				if w.Code != tc.status || w.Header().Get("Cache-Status") != tc.cacheStatus {
					t.Errorf("%s after the purge: %d Cache-Status %q, want %d %q", u, w.Code, w.Header().Get("Cache-Status"), tc.status, tc.cacheStatus)
				}
				if w.Code == 200 && w.Body.String() != bodies[u] {
					t.Errorf("%s after the purge got another caller's body:\n%s\nwant its own:\n%s", u, w.Body, bodies[u])
				}
			}
			if s := demoGet(t, a.handler, "summit", target); s.Code != 200 || s.Body.String() != bodies["summit"] || s.Header().Get("Cache-Status") != "listingproxy; hit" {
				t.Errorf("summit after harbour's purge: %d %q, want its own body, a hit", s.Code, s.Header().Get("Cache-Status"))
			}
		})
	}
}

func TestAdminHealth(t *testing.T) {
	a := newDemoApp(t)
	tests := []struct {
		path, user, pass string
		status           int
	}{
		{"/healthz", "", "", http.StatusOK},
		{"/readyz", "", "", http.StatusOK},
		{"/debug/pprof/", "", "", http.StatusUnauthorized},
		{"/debug/pprof/cmdline", "", "", http.StatusUnauthorized},
		{"/debug/pprof/", "harbour", "harbour-demo", http.StatusUnauthorized},
		{"/debug/pprof/", "admin", "admin-demo", http.StatusOK},
		{"/debug/pprof/cmdline", "admin", "admin-demo", http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.path+" "+tt.user, func(t *testing.T) {
			r := httptest.NewRequest("GET", tt.path, nil)
			if tt.user != "" {
				r.SetBasicAuth(tt.user, tt.pass)
			}
			w := httptest.NewRecorder()
			a.admin.ServeHTTP(w, r)
			if w.Code != tt.status {
				t.Errorf("status %d: %s, want %d", w.Code, w.Body, tt.status)
			}
		})
	}
	w := httptest.NewRecorder()
	a.handler.ServeHTTP(w, httptest.NewRequest("GET", "/debug/pprof/", nil))
	if w.Code == 200 {
		t.Error("pprof is reachable on the public listener")
	}
}

// TestAdminBackends: GET /backends (admin credentials) reports each
// backend's readiness, ping and breakers, here after a success of harbour's
// and the backend-wide breaker tripped by refused connections, with the
// fixed clock of the golden demo; the exact document is
// testdata/golden/backends.json (-update rewrites it).
func TestAdminBackends(t *testing.T) {
	a := newDemoApp(t)
	demoGet(t, a.handler, "harbour", "/au/properties.json?limit=2")
	tripBreaker(t, a, 5)
	get := func(user, pass string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "/backends", nil)
		if user != "" {
			r.SetBasicAuth(user, pass)
		}
		w := httptest.NewRecorder()
		a.admin.ServeHTTP(w, r)
		return w
	}
	if w := get("harbour", "harbour-demo"); w.Code != http.StatusUnauthorized {
		t.Errorf("/backends as an API user: %d, want 401", w.Code)
	}
	w := get("admin", "admin-demo")
	if w.Code != 200 || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("/backends: %d %q", w.Code, w.Header().Get("Content-Type"))
	}
	path := filepath.Join("..", "..", "testdata", "golden", "backends.json")
	if *update {
		if err := os.WriteFile(path, w.Body.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/listingproxy -run TestAdminBackends -update)", err)
	}
	if diff := cmp.Diff(string(want), w.Body.String()); diff != "" {
		t.Errorf("/backends (-want +got):\n%s", diff)
	}
}
