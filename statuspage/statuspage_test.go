package statuspage_test

import (
	"encoding/json"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"listingproxy/cache"
	"listingproxy/statuspage"
	"listingproxy/telemetry"
	"listingproxy/upstream/breaker"
)

type fakeTraffic []telemetry.TenantStats

func (f fakeTraffic) Tenants() []telemetry.TenantStats { return f }

type fakeFailures []telemetry.BackendErrorStats

func (f fakeFailures) Backends() []telemetry.BackendErrorStats { return f }

type fakeEvents []telemetry.Event

func (f fakeEvents) RecentEvents() []telemetry.Event { return f }

type fakeCache cache.Stats

func (f fakeCache) Stats() cache.Stats { return cache.Stats(f) }

type fakeBreakers []breaker.Status

func (f fakeBreakers) States() []breaker.Status { return f }

var now = time.Date(2026, 11, 22, 20, 0, 0, 0, time.UTC)

func TestSnapshot(t *testing.T) {
	failedAt := now.Add(-time.Second)
	p := statuspage.New(statuspage.Options{
		Now: func() time.Time { return now },
		Traffic: fakeTraffic{
			{Tenant: "harbour", Backend: "demo", Requests: 10, Hits: 5, Stale: 1, StaleIfError: 1, Negative: 1, Misses: 2},
			{Tenant: "summit", Backend: "legacy", Requests: 4, Misses: 1, Uncached: 3, ServerErrors: 3},
			{Tenant: "quiet", Backend: "demo", Requests: 2, Uncached: 2},
		},
		Breakers: fakeBreakers{
			{Backend: "legacy", State: breaker.StateClosed},
			{Backend: "legacy", Tenant: "summit", State: breaker.StateOpen, RetryAfter: 12 * time.Second, LastError: "HTTP 500"},
			{Backend: "demo", State: breaker.StateClosed},
		},
		Failures: fakeFailures{{Backend: "legacy", Errors: 3, LastError: "crm: HTTP 500", LastAt: failedAt}},
		Cache:    fakeCache{Bytes: 2048, MaxBytes: 1 << 20, Entries: 3, OverlayEntries: 1, Hits: 8, Misses: 2, Evictions: 4, HardPurges: 1, SoftPurges: 2},
		Events:   fakeEvents{{Time: now, Kind: "purge", Detail: "source=admin kind=tenant mode=hard tenant=harbour"}},
	})
	want := statuspage.Snapshot{
		Time: now, Started: now,
		Tenants: []statuspage.TenantRow{
			{Tenant: "harbour", Backend: "demo", Requests: 10, Hits: 8, Stale: 2, Misses: 2, HitRatio: 0.8},
			{Tenant: "summit", Backend: "legacy", Requests: 4, Misses: 1, HitRatio: 0, ServerErrors: 3},
			{Tenant: "quiet", Backend: "demo", Requests: 2},
		},
		Backends: []statuspage.BackendRow{
			{Backend: "demo", State: "closed", Breakers: []statuspage.BreakerRow{{State: "closed"}}},
			{Backend: "legacy", State: "open", Breakers: []statuspage.BreakerRow{
				{State: "closed"}, {Tenant: "summit", State: "open", RetryAfterSeconds: 12, LastError: "HTTP 500"},
			}, Errors: 3, LastError: "crm: HTTP 500", LastErrorAt: &failedAt},
		},
		Cache:  &statuspage.CacheRow{Bytes: 2048, MaxBytes: 1 << 20, Entries: 4, Evictions: 4, Purges: 3, HitRatio: 0.8},
		Events: []statuspage.EventRow{{Time: now, Kind: "purge", Detail: "source=admin kind=tenant mode=hard tenant=harbour"}},
	}
	if diff := cmp.Diff(want, p.Snapshot()); diff != "" {
		t.Errorf("Snapshot (-want +got):\n%s", diff)
	}
}

func TestNoSources(t *testing.T) {
	p := statuspage.New(statuspage.Options{})
	w := httptest.NewRecorder()
	p.ServeHTTP(w, httptest.NewRequest("GET", "/status.json", nil))
	var got map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, w.Body)
	}
	for _, k := range []string{"tenants", "backends", "events"} {
		if list, ok := got[k].([]any); !ok || len(list) != 0 {
			t.Errorf("%s = %v, want an empty list (never null: the page iterates it)", k, got[k])
		}
	}
	if _, ok := got["cache"]; ok {
		t.Errorf("cache = %v without a cache source, want absent", got["cache"])
	}
}

func TestPageHTML(t *testing.T) {
	p := statuspage.New(statuspage.Options{Build: telemetry.Build{Version: "v1.2.3", Commit: "abc123<script>", GoVersion: "go1.26"}, Refresh: 500 * time.Millisecond})
	w := httptest.NewRecorder()
	p.ServeHTTP(w, httptest.NewRequest("GET", "/status", nil))
	body := w.Body.String()
	if ct := w.Header().Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	if !regexp.MustCompile(`const url = "status.json", every = +500 *;`).MatchString(body) {
		t.Error("page does not poll status.json every 500ms")
	}
	for _, want := range []string{"v1.2.3", "abc123&lt;script&gt;", `<table id="tenants">`} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}
