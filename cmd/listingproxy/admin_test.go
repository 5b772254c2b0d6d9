package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

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

	purge := func(query, user, pass string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "/cache/purge?"+query, nil)
		if user != "" {
			r.SetBasicAuth(user, pass)
		}
		w := httptest.NewRecorder()
		a.admin.ServeHTTP(w, r)
		return w
	}
	tests := []struct {
		name, query, user, pass string
		status                  int
	}{
		{"no credentials", "tenant=harbour", "", "", http.StatusUnauthorized},
		{"wrong password", "tenant=harbour", "admin", "nope", http.StatusUnauthorized},
		{"api user is not admin", "tenant=harbour", "harbour", "harbour-demo", http.StatusUnauthorized},
		{"unknown tenant", "tenant=nobody", "admin", "admin-demo", http.StatusBadRequest},
		{"unknown resource", "tenant=harbour&resource=houses", "admin", "admin-demo", http.StatusBadRequest},
		{"purge harbour", "tenant=harbour", "admin", "admin-demo", http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if w := purge(tt.query, tt.user, tt.pass); w.Code != tt.status {
				t.Errorf("status %d (%s), want %d", w.Code, strings.TrimSpace(w.Body.String()), tt.status)
			}
		})
	}
	if cs := demoGet(t, a.handler, "harbour", target).Header().Get("Cache-Status"); !strings.Contains(cs, "miss") {
		t.Errorf("after purge Cache-Status %q, want a miss", cs)
	}
	if cs := demoGet(t, a.handler, "summit", summitTarget).Header().Get("Cache-Status"); cs != "listingproxy; hit" {
		t.Errorf("other tenant after purge Cache-Status %q, want a hit (untouched)", cs)
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
