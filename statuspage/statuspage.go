// Package statuspage owns the operator's page of the admin listener, in the
// manner of HAProxy's stats page: per tenant and backend, the live request
// rate, hit ratio, stale serves and 5xx answers, each breaker's state and
// last error, the cache's bytes and entries, and the recent purges and
// reloads. It is one HTML page (html/template, inline CSS and a little
// vanilla JavaScript, no build step) that polls a JSON snapshot of the same
// data.
//
// It reads its data through the small interfaces it declares below, which
// telemetry.Metrics, telemetry.ErrorDigest, cache.Store and
// breaker.Registry satisfy. It must not import proxy, config or cmd, and
// does no authentication: the caller mounts it behind the admin
// credentials.
package statuspage

import (
	"cmp"
	_ "embed"
	"encoding/json"
	"html/template"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"listingproxy/cache"
	"listingproxy/telemetry"
	"listingproxy/upstream/breaker"
)

// Traffic reports each tenant's requests (telemetry.Metrics).
type Traffic interface {
	Tenants() []telemetry.TenantStats
}

// Failures reports each backend's failures (telemetry.ErrorDigest).
type Failures interface {
	Backends() []telemetry.BackendErrorStats
}

// Events reports the recent reloads and purges (telemetry.Metrics).
type Events interface {
	RecentEvents() []telemetry.Event
}

// CacheStats reports the cache's counters (cache.Store).
type CacheStats interface {
	Stats() cache.Stats
}

// Breakers reports every circuit breaker (breaker.Registry).
type Breakers interface {
	States() []breaker.Status
}

// Options are the page's sources; a nil source leaves its part out. Now
// and Refresh have defaults.
type Options struct {
	Traffic  Traffic
	Failures Failures
	Events   Events
	Cache    CacheStats
	Breakers Breakers
	// Build names the running binary in the page's header.
	Build telemetry.Build
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Refresh is how often the page polls. Default 2s.
	Refresh time.Duration
}

// Page is the operator's page as an http.Handler: a path ending in ".json"
// gets the snapshot, any other the HTML page (which fetches "<its
// path>.json"). Mount it at "GET /status" and "GET /status.json".
type Page struct {
	o       Options
	started time.Time
}

// New returns the page.
func New(o Options) *Page {
	if o.Now == nil {
		o.Now = time.Now
	}
	o.Refresh = cmp.Or(o.Refresh, 2*time.Second)
	return &Page{o: o, started: o.Now()}
}

//go:embed page.html
var pageHTML string

var pageTemplate = template.Must(template.New("status").Parse(pageHTML))

// ServeHTTP implements http.Handler.
func (p *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if strings.HasSuffix(r.URL.Path, ".json") {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(p.Snapshot())
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	// The page's own script and style only; no framing.
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; frame-ancestors 'none'")
	path := r.URL.Path
	_ = pageTemplate.Execute(w, map[string]any{
		"Build":     p.o.Build,
		"JSON":      path[strings.LastIndexByte(path, '/')+1:] + ".json",
		"RefreshMS": p.o.Refresh.Milliseconds(),
	})
}

// Snapshot is what the page shows, as of Time.
type Snapshot struct {
	Time     time.Time       `json:"time"`
	Started  time.Time       `json:"started"`
	Build    telemetry.Build `json:"build"`
	Tenants  []TenantRow     `json:"tenants"`
	Backends []BackendRow    `json:"backends"`
	Cache    *CacheRow       `json:"cache,omitempty"`
	Events   []EventRow      `json:"events"`
}

// TenantRow is one tenant's traffic since start. The page derives the live
// rate from two snapshots.
type TenantRow struct {
	Tenant  string `json:"tenant"`
	Backend string `json:"backend"`
	// Requests counts authenticated API requests.
	Requests uint64 `json:"requests"`
	// Hits counts bodies served from the cache (fresh, stale, stale-if-
	// error, negative); Stale those served past their TTL (stale and
	// stale-if-error); Misses those the backend had to fill.
	Hits   uint64 `json:"hits"`
	Stale  uint64 `json:"stale"`
	Misses uint64 `json:"misses"`
	// HitRatio is Hits over cache lookups (hits, misses, bypasses); 0
	// before any lookup.
	HitRatio     float64 `json:"hit_ratio"`
	ServerErrors uint64  `json:"server_errors"`
}

// BackendRow is one backend: its breakers and its failures.
type BackendRow struct {
	Backend string `json:"backend"`
	// State is the worst state among its breakers (open, half-open,
	// closed); "" when it has none.
	State    string       `json:"state"`
	Breakers []BreakerRow `json:"breakers"`
	// Errors counts the 5xx answers its failures caused since start.
	Errors      uint64     `json:"errors"`
	LastError   string     `json:"last_error"`
	LastErrorAt *time.Time `json:"last_error_at,omitempty"`
}

// BreakerRow is one breaker of a backend.
type BreakerRow struct {
	// Tenant is "" for the backend-wide breaker.
	Tenant            string  `json:"tenant"`
	State             string  `json:"state"`
	RetryAfterSeconds float64 `json:"retry_after_seconds"`
	LastError         string  `json:"last_error"`
}

// CacheRow is the cache's occupancy and lifetime counters.
type CacheRow struct {
	Bytes     int64   `json:"bytes"`
	MaxBytes  int64   `json:"max_bytes"`
	Entries   int64   `json:"entries"`
	Evictions uint64  `json:"evictions"`
	Purges    uint64  `json:"purges"`
	HitRatio  float64 `json:"hit_ratio"`
}

// EventRow is a recent reload or purge.
type EventRow struct {
	Time   time.Time `json:"time"`
	Kind   string    `json:"kind"`
	Detail string    `json:"detail"`
	Error  string    `json:"error,omitempty"`
}

// Snapshot reads every source once.
func (p *Page) Snapshot() Snapshot {
	s := Snapshot{Time: p.o.Now(), Started: p.started, Build: p.o.Build, Tenants: []TenantRow{}, Backends: []BackendRow{}, Events: []EventRow{}}
	backends := map[string]*BackendRow{}
	backend := func(name string) *BackendRow {
		if backends[name] == nil {
			backends[name] = &BackendRow{Backend: name, Breakers: []BreakerRow{}}
		}
		return backends[name]
	}
	if p.o.Traffic != nil {
		for _, t := range p.o.Traffic.Tenants() {
			row := TenantRow{Tenant: t.Tenant, Backend: t.Backend, Requests: t.Requests, Misses: t.Misses, ServerErrors: t.ServerErrors,
				Hits: t.Hits + t.Stale + t.StaleIfError + t.Negative, Stale: t.Stale + t.StaleIfError}
			row.HitRatio = ratio(row.Hits, row.Hits+t.Misses+t.Bypass)
			s.Tenants = append(s.Tenants, row)
			backend(t.Backend)
		}
	}
	if p.o.Breakers != nil {
		for _, b := range p.o.Breakers.States() {
			row := backend(b.Backend)
			row.Breakers = append(row.Breakers, BreakerRow{Tenant: b.Tenant, State: b.State.String(),
				RetryAfterSeconds: b.RetryAfter.Seconds(), LastError: b.LastError})
			if severity(b.State.String()) > severity(row.State) {
				row.State = b.State.String()
			}
		}
	}
	if p.o.Failures != nil {
		for _, f := range p.o.Failures.Backends() {
			row := backend(f.Backend)
			at := f.LastAt
			row.Errors, row.LastError, row.LastErrorAt = f.Errors, f.LastError, &at
		}
	}
	for _, name := range slices.Sorted(maps.Keys(backends)) {
		if name != "" {
			s.Backends = append(s.Backends, *backends[name])
		}
	}
	if p.o.Cache != nil {
		st := p.o.Cache.Stats()
		hits := st.Hits + st.Stale + st.StaleIfError + st.Negative
		s.Cache = &CacheRow{Bytes: st.Bytes, MaxBytes: st.MaxBytes, Entries: st.Entries + st.OverlayEntries,
			Evictions: st.Evictions, Purges: st.SoftPurges + st.HardPurges, HitRatio: ratio(hits, hits+st.Misses+st.Bypass)}
	}
	if p.o.Events != nil {
		for _, e := range p.o.Events.RecentEvents() {
			s.Events = append(s.Events, EventRow{Time: e.Time, Kind: e.Kind, Detail: e.Detail, Error: e.Err})
		}
	}
	return s
}

func ratio(part, whole uint64) float64 {
	if whole == 0 {
		return 0
	}
	return float64(part) / float64(whole)
}

// severity orders breaker states for a backend's summary.
func severity(state string) int {
	switch state {
	case "open":
		return 3
	case "half-open":
		return 2
	case "closed":
		return 1
	}
	return 0
}
