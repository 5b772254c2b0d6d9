package admin_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/bcrypt"

	"listingproxy/admin"
	"listingproxy/cache"
	"listingproxy/cache/disktier"
	"listingproxy/cache/redistier"
	"listingproxy/internal/testkit"
	"listingproxy/telemetry"
	"listingproxy/upstream/breaker"
)

const operator, password = "ops", "ops-secret"

// fakePurger records the purges asked of it and fails those of tenant
// failFor as a shared tier that cannot record them would. It says each
// purge matches matched entries and one more per tag.
type fakePurger struct {
	failFor, pendingFor string
	matched             int
	got                 []cache.Purge
}

func (f *fakePurger) Matching(p cache.Purge) int { return f.matched + len(p.Tags) }

func (f *fakePurger) PurgeContext(_ context.Context, p cache.Purge) error {
	f.got = append(f.got, p)
	switch p.Tenant {
	case f.failFor:
		return errors.New("redis: connection refused")
	case f.pendingFor:
		return fmt.Errorf("%w: redistier: purge: no answer within the timeout", cache.ErrPurgePending)
	}
	return nil
}

type fakeBreakers []breaker.Status

func (f fakeBreakers) States() []breaker.Status { return f }

// serve starts the admin API of o (with the operator's credentials) and
// returns a function making requests to it.
func serve(t *testing.T, o admin.Options) func(method, path string, auth bool) (int, string) {
	t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	o.Username, o.PasswordBcrypt = operator, string(hash)
	srv := httptest.NewServer(admin.New(o))
	t.Cleanup(srv.Close)
	return func(method, path string, auth bool) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if auth {
			req.Header.Set("Authorization", testkit.BasicAuth(operator, password))
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(body))
	}
}

func TestHealthAndReadiness(t *testing.T) {
	t.Parallel()
	var draining, warming atomic.Bool
	do := serve(t, admin.Options{Draining: draining.Load, Warming: warming.Load})
	for _, tc := range []struct {
		path              string
		draining, warming bool
		status            int
		body              string
	}{
		{"/healthz", false, false, 200, "ok"},
		{"/readyz", false, false, 200, "ready"},
		{"/healthz", true, false, 200, "ok"},
		{"/readyz", true, false, 503, "draining: shutting down"},
		{"/healthz", false, true, 200, "ok"},
		{"/readyz", false, true, 503, "warming: fetching the hottest keys again"},
		{"/readyz", true, true, 503, "draining: shutting down"},
		{"/metrics", false, false, 404, "404 page not found"}, // no Metrics handler
	} {
		draining.Store(tc.draining)
		warming.Store(tc.warming)
		if status, body := do("GET", tc.path, false); status != tc.status || body != tc.body {
			t.Errorf("GET %s (draining %v, warming %v) = %d %q, want %d %q", tc.path, tc.draining, tc.warming, status, body, tc.status, tc.body)
		}
	}
}

func TestPurge(t *testing.T) {
	t.Parallel()
	p := &fakePurger{failFor: "summit", pendingFor: "coast", matched: 3}
	var events []telemetry.Purge
	do := serve(t, admin.Options{
		Purger: p, Tenants: []string{"coast", "harbour", "summit"}, Resources: []string{"properties", "agent"},
		Purged: func(e telemetry.Purge) { events = append(events, e) },
	})
	for _, tc := range []struct {
		name, query string
		auth        bool
		status      int
		body        string
	}{
		{"no credentials", "tenant=harbour", false, 401, "admin credentials required"},
		{"unknown tenant", "tenant=nobody", true, 400, `unknown tenant "nobody"`},
		{"no tenant", "", true, 400, `unknown tenant ""`},
		{"unknown resource", "tenant=harbour&resource=houses", true, 400, `unknown resource "houses" (want properties, agent)`},
		{"unknown mode", "tenant=harbour&mode=gentle", true, 400, `unknown mode "gentle" (want soft, the default, or hard)`},
		{"tenant", "tenant=harbour", true, 200, "purged tenant=harbour resource=all mode=soft matched=3"},
		{"resource, hard", "tenant=harbour&resource=agent&mode=hard", true, 200, "purged tenant=harbour resource=agent mode=hard matched=3"},
		{"not recorded for the fleet", "tenant=summit", true, 503, "purged tenant=summit resource=all mode=soft matched=3 on this replica only: the shared tier could not record it for the fleet (redis: connection refused); retry"},
		{"recorded for the fleet later", "tenant=coast&mode=hard", true, 202, "purged tenant=coast resource=all mode=hard matched=3 on this replica; the shared tier has not recorded it for the fleet yet and retries until it has (purge not recorded for the fleet yet: retrying until it is: redistier: purge: no answer within the timeout)"},
	} {
		if status, body := do("POST", "/cache/purge?"+tc.query, tc.auth); status != tc.status || body != tc.body {
			t.Errorf("%s: %d %q, want %d %q", tc.name, status, body, tc.status, tc.body)
		}
	}
	wantPurges := []cache.Purge{{Tenant: "harbour", Mode: cache.Soft}, {Tenant: "harbour", Resource: "agent", Mode: cache.Hard}, {Tenant: "summit", Mode: cache.Soft}, {Tenant: "coast", Mode: cache.Hard}}
	if diff := cmp.Diff(wantPurges, p.got); diff != "" {
		t.Errorf("purges (-want +got):\n%s", diff)
	}
	want := []telemetry.Purge{
		{Source: "admin", Kind: "tenant", Mode: "soft", Tenant: "harbour"},
		{Source: "admin", Kind: "resource", Mode: "hard", Tenant: "harbour", Target: "agent"},
		{Source: "admin", Kind: "tenant", Mode: "soft", Tenant: "summit"},
		{Source: "admin", Kind: "tenant", Mode: "hard", Tenant: "coast"},
	}
	if diff := cmp.Diff(want, events); diff != "" {
		t.Errorf("purge events (-want +got):\n%s", diff)
	}

	disabled := serve(t, admin.Options{Tenants: []string{"harbour"}})
	if status, body := disabled("POST", "/cache/purge?tenant=harbour", true); status != 409 || body != "cache is disabled" {
		t.Errorf("purge without a cache = %d %q, want 409", status, body)
	}
}

func TestOperatorEndpointsNeedCredentials(t *testing.T) {
	t.Parallel()
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "status page") })
	do := serve(t, admin.Options{StatusPage: page})
	for _, path := range []string{"/backends", "/debug/pprof/", "/status", "/status.json"} {
		if status, _ := do("GET", path, false); status != 401 {
			t.Errorf("GET %s without credentials = %d, want 401", path, status)
		}
		if status, _ := do("GET", path, true); status != 200 {
			t.Errorf("GET %s with credentials = %d, want 200", path, status)
		}
	}
	if _, body := do("GET", "/status", true); body != "status page" {
		t.Errorf("GET /status = %q, want the status page", body)
	}
	// No operator configured: nobody gets in.
	open := httptest.NewServer(admin.New(admin.Options{}))
	defer open.Close()
	req, _ := http.NewRequest("GET", open.URL+"/backends", nil)
	req.Header.Set("Authorization", testkit.BasicAuth("", ""))
	resp, err := open.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("GET /backends with no operator configured = %d, want 401", resp.StatusCode)
	}
}

func TestBackends(t *testing.T) {
	t.Parallel()
	failed := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	do := serve(t, admin.Options{
		Backends: []admin.Backend{
			{Name: "pg", Kind: "postgres", Ready: func() error { return errors.New("not answered yet") },
				Ping: func(context.Context) error { return errors.New("connection refused") }},
			{Name: "crm", Kind: "crm"},
		},
		Breakers: fakeBreakers{
			{Backend: "pg", Tenant: "harbour", State: breaker.StateOpen, RetryAfter: 3 * time.Second, LastError: "timeout", LastFailure: failed},
			{Backend: "gone", Tenant: "x"},
		},
		SharedCache: func() redistier.Stats {
			return redistier.Stats{Synced: false, BreakerOpen: true, PurgesPending: 3, Hits: 9}
		},
		DiskCache: func() disktier.Stats { return disktier.Stats{Entries: 7, Bytes: 4096, Disabled: true, Hits: 5} },
	})
	status, body := do("GET", "/backends", true)
	if status != 200 {
		t.Fatalf("GET /backends = %d %s", status, body)
	}
	var got struct {
		Backends    []map[string]any `json:"backends"`
		SharedCache map[string]any   `json:"shared_cache"`
		DiskCache   map[string]any   `json:"disk_cache"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("body %s: %v", body, err)
	}
	if diff := cmp.Diff(map[string]any{"entries": 7.0, "bytes": 4096.0, "disabled": true}, got.DiskCache); diff != "" {
		t.Errorf("/backends disk_cache (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"synced": false, "breaker_open": true, "purges_pending": 3.0}, got.SharedCache); diff != "" {
		t.Errorf("/backends shared_cache (-want +got):\n%s", diff)
	}
	want := []map[string]any{
		{"name": "crm", "kind": "crm", "ready": true, "breakers": []any{}},
		{"name": "pg", "kind": "postgres", "ready": false, "error": "not answered yet", "ping": "connection refused", "breakers": []any{
			map[string]any{"tenant": "harbour", "state": "open", "retry_after_seconds": 3.0, "last_error": "timeout", "last_failure": "2026-11-22T12:00:00Z"},
		}},
	}
	if diff := cmp.Diff(want, got.Backends); diff != "" {
		t.Errorf("/backends (-want +got):\n%s", diff)
	}
}

type fakeLimits struct {
	fakeBreakers
	limits []breaker.LimitStatus
}

func (f fakeLimits) Limits() []breaker.LimitStatus { return f.limits }

// TestBackendsConcurrency: /backends shows each backend's concurrency limit
// when the breakers report limits.
func TestBackendsConcurrency(t *testing.T) {
	t.Parallel()
	do := serve(t, admin.Options{
		Backends: []admin.Backend{{Name: "crm", Kind: "crm"}, {Name: "pg", Kind: "postgres"}},
		Breakers: fakeLimits{limits: []breaker.LimitStatus{
			{Backend: "crm", Adaptive: true, Limit: 48, Ceiling: 256, InFlight: 30, Waiting: 2, Waits: 7,
				Refusals: map[string]uint64{breaker.RefusedQueueTimeout: 3, breaker.RefusedCanceled: 1}},
		}},
	})
	status, body := do("GET", "/backends", true)
	var got struct {
		Backends []map[string]any `json:"backends"`
	}
	if err := json.Unmarshal([]byte(body), &got); status != 200 || err != nil {
		t.Fatalf("GET /backends = %d %s (%v)", status, body, err)
	}
	want := []map[string]any{
		{"name": "crm", "kind": "crm", "ready": true, "breakers": []any{}, "concurrency": map[string]any{
			"adaptive": true, "limit": 48.0, "ceiling": 256.0, "in_flight": 30.0, "waiting": 2.0, "waits": 7.0,
			"refusals": map[string]any{"queue_timeout": 3.0, "canceled": 1.0}}},
		{"name": "pg", "kind": "postgres", "ready": true, "breakers": []any{}},
	}
	if diff := cmp.Diff(want, got.Backends); diff != "" {
		t.Errorf("/backends (-want +got):\n%s", diff)
	}
}

// fakeTargets tags a url by its text and an entity by kind and id.
type fakeTargets struct{}

func (fakeTargets) URLTag(tenant, target string) (cache.Tag, error) {
	if !strings.HasPrefix(target, "/") {
		return 0, errors.New("url " + target + " is not a request path")
	}
	return cache.NewTag(target), nil
}

func (fakeTargets) EntityTag(kind string, id int64) cache.Tag { return cache.IDTag(kind, id) }

func TestPurgeByURLAndEntity(t *testing.T) {
	t.Parallel()
	p := &fakePurger{}
	var events []telemetry.Purge
	do := serve(t, admin.Options{
		Purger: p, Tenants: []string{"harbour"}, Resources: []string{"properties"}, Targets: fakeTargets{},
		Purged: func(e telemetry.Purge) { events = append(events, e) },
	})
	for _, tc := range []struct {
		query  string
		status int
		body   string
	}{
		{"tenant=harbour&url=%2Fau%2Fproperties.xml%3Fstatus%3Dcurrent", 200, "purged tenant=harbour url=/au/properties.xml?status=current mode=soft matched=1"},
		{"tenant=harbour&property=7&property=8&mode=hard", 200, "purged tenant=harbour property=7,8 mode=hard matched=2"},
		{"tenant=harbour&agent=3", 200, "purged tenant=harbour agent=3 mode=soft matched=1"},
		{"tenant=harbour&resource=", 200, "purged tenant=harbour resource=all mode=soft matched=0"},
		{"tenant=harbour&url=au", 400, "url au is not a request path"},
		{"tenant=harbour&agent=0", 400, `agent id "0" is not a positive whole number`},
		{"tenant=harbour&resource=properties&agent=1", 400, "give at most one of resource, url, property and agent (got resource and agent)"},
		{"tenant=harbour&tenant=summit", 400, `parameter "tenant" given 2 times (want once)`},
		{"tenant=harbour&ids=1", 400, `unknown parameter "ids" (want tenant, resource, url, property, agent, mode; percent-encode the query of a url, e.g. curl --data-urlencode)`},
	} {
		if status, body := do("POST", "/cache/purge?"+tc.query, true); status != tc.status || body != tc.body {
			t.Errorf("%s: %d %q, want %d %q", tc.query, status, body, tc.status, tc.body)
		}
	}
	want := []cache.Purge{
		{Tenant: "harbour", Tags: []cache.Tag{cache.NewTag("/au/properties.xml?status=current")}},
		{Tenant: "harbour", Tags: []cache.Tag{cache.IDTag("property", 7), cache.IDTag("property", 8)}, Mode: cache.Hard},
		{Tenant: "harbour", Tags: []cache.Tag{cache.IDTag("agent", 3)}},
		{Tenant: "harbour"},
	}
	if diff := cmp.Diff(want, p.got); diff != "" {
		t.Errorf("purges (-want +got):\n%s", diff)
	}
	wantEvents := []telemetry.Purge{
		{Source: "admin", Kind: "url", Mode: "soft", Tenant: "harbour", Target: "/au/properties.xml?status=current"},
		{Source: "admin", Kind: "entity", Mode: "hard", Tenant: "harbour", Target: "property 7,8"},
		{Source: "admin", Kind: "entity", Mode: "soft", Tenant: "harbour", Target: "agent 3"},
		{Source: "admin", Kind: "tenant", Mode: "soft", Tenant: "harbour"},
	}
	if diff := cmp.Diff(wantEvents, events); diff != "" {
		t.Errorf("purge events (-want +got):\n%s", diff)
	}
}

// TestUncleanPathsAreRefused sends raw request lines (a client library
// would clean them) that ServeMux would redirect to their cleaned form:
// the admin listener answers 400 instead, with or without credentials, and
// never a redirect.
func TestUncleanPathsAreRefused(t *testing.T) {
	t.Parallel()
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(admin.New(admin.Options{Username: operator, PasswordBcrypt: string(hash)}))
	t.Cleanup(srv.Close)
	raw := func(method, target string, auth bool) *http.Response {
		t.Helper()
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		req := method + " " + target + " HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n"
		if auth {
			req += "Authorization: " + testkit.BasicAuth(operator, password) + "\r\n"
		}
		if _, err := io.WriteString(c, req+"\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%s %s: %v", method, target, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	for _, target := range []string{"//debug/pprof/cmdline", "/./", "/../", "/debug/pprof/../pprof/", "/backends/.", "//backends", "/status/../backends"} {
		for _, auth := range []bool{false, true} {
			resp := raw("GET", target, auth)
			if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
				t.Errorf("GET %s (credentials %v) = %d, Location %q; want 400 and no redirect", target, auth, resp.StatusCode, resp.Header.Get("Location"))
			}
		}
	}
	for _, c := range []struct {
		target string
		want   int
	}{{"/healthz", 200}, {"/debug/pprof/", 401}, {"/backends", 401}, {"/nothing/", 404}} {
		if resp := raw("GET", c.target, false); resp.StatusCode != c.want {
			t.Errorf("GET %s = %d, want %d", c.target, resp.StatusCode, c.want)
		}
	}
}

// readyPinger is a backend with both Ready and Ping.
type readyPinger struct{}

func (readyPinger) Ready() error               { return errors.New("not answered yet") }
func (readyPinger) Ping(context.Context) error { return nil }

// TestBackendOf: an opened backend's Ready and Ping are reported when it
// has them, and only then.
func TestBackendOf(t *testing.T) {
	if b := admin.BackendOf("pg", "postgres", readyPinger{}); b.Name != "pg" || b.Kind != "postgres" || b.Ready == nil || b.Ready() == nil || b.Ping == nil {
		t.Errorf("a backend with both: %+v", b)
	}
	if b := admin.BackendOf("legacy", "crm", struct{}{}); b.Ready != nil || b.Ping != nil {
		t.Errorf("a backend with neither: %+v", b)
	}
}
