// Package statuspage owns the operator's page of the admin listener, in the
// manner of HAProxy's stats page: per tenant and backend, the live request
// rate, latency (p50, p99), hit ratio, stale serves, 4xx (401, 429),
// criteria errors and 5xx answers, each breaker's state and last error,
// every cache tier (memory, the shared tier, the disk tier) with its
// state, the change feeds, and the recent purges and reloads. It is one
// HTML page (html/template, inline CSS and a little vanilla JavaScript, no
// build step) rendered with its data on the server, so that curl and text
// browsers see it (without JavaScript it refreshes itself); where
// JavaScript runs, it polls a JSON snapshot of the same data and redraws
// the tables in place.
//
// It reads its data through the small interfaces it declares below, which
// telemetry.Metrics, telemetry.ErrorDigest, cache.Store and
// breaker.Registry satisfy, and the second tiers' own Stats functions
// (redistier, disktier), whose rows it computes. It must not import proxy, config or cmd, and
// does no authentication: the caller mounts it behind the admin
// credentials.
package statuspage

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"html/template"
	"maps"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"listingproxy/cache"
	"listingproxy/cache/disktier"
	"listingproxy/cache/redistier"
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

// Unauthenticated is the optional method of a Traffic that reports the
// requests answered without a tenant (telemetry.Metrics).
type Unauthenticated interface {
	Unauthenticated() telemetry.TenantStats
}

// Feeds reports the change feeds (telemetry.Metrics).
type Feeds interface {
	Feeds() []telemetry.FeedStats
}

// Fleet is where the replicas of a fleet publish their status records and
// read each other's (redistier.Tier, in Redis).
type Fleet interface {
	PublishStatus(ctx context.Context, id string, record []byte, ttl time.Duration, now time.Time) error
	Replicas(ctx context.Context, now time.Time) (map[string][]byte, error)
	ForgetStatus(ctx context.Context, id string) error
}

// Options are the page's sources; a nil source leaves its part out. Now
// and Refresh have defaults.
type Options struct {
	Traffic  Traffic
	Failures Failures
	Events   Events
	Cache    CacheStats
	Breakers Breakers
	Feeds    Feeds
	// Shared and Disk report the second tiers (cache.shared, cache.disk)
	// from their counters (redistier.Tier.Stats, disktier.Tier.Stats);
	// nil when the tier is off.
	Shared func() redistier.Stats
	Disk   func() disktier.Stats
	// Fleet, when set, puts every replica of the fleet on the page: Run
	// publishes this replica's summary under ID every Publish (valid for
	// three times as long), and the page reads them all.
	Fleet Fleet
	// ID names this replica in the fleet. Default: the host name (a
	// pod's name in Kubernetes) and the process id.
	ID string
	// Publish is how often Run publishes. Default 5s.
	Publish time.Duration
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
	o.Publish = cmp.Or(o.Publish, 5*time.Second)
	if o.ID == "" {
		host, _ := os.Hostname()
		o.ID = cmp.Or(host, "localhost") + "-" + strconv.Itoa(os.Getpid())
		if n := pages.Add(1); n > 1 { // a second page of this process (tests)
			o.ID += "-" + strconv.FormatInt(n, 10)
		}
	}
	return &Page{o: o, started: o.Now()}
}

// pages counts the pages of this process, for their default IDs.
var pages atomic.Int64

// Run publishes this replica's summary to the fleet (Options.Fleet) now
// and every Options.Publish until ctx ends, and then deletes it. Without a Fleet it returns at
// once. A failed publication is retried at the next tick: the page shows
// why the fleet cannot be read.
func (p *Page) Run(ctx context.Context) {
	if p.o.Fleet == nil {
		return
	}
	tick := time.NewTicker(p.o.Publish)
	defer tick.Stop()
	for {
		p.publish(ctx)
		select {
		case <-ctx.Done():
			// Stopping: off the fleet's page now, not after the ttl.
			_ = p.o.Fleet.ForgetStatus(context.WithoutCancel(ctx), p.o.ID)
			return
		case <-tick.C:
		}
	}
}

// Start runs Run in a goroutine of its own until stop is called; stop
// returns once Run has (the summary deleted from the fleet).
func (p *Page) Start() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Run(ctx)
	}()
	return func() { cancel(); <-done }
}

func (p *Page) publish(ctx context.Context) {
	rec, err := json.Marshal(p.replica(p.Snapshot()))
	if err != nil {
		return
	}
	_ = p.o.Fleet.PublishStatus(ctx, p.o.ID, rec, 3*p.o.Publish, p.o.Now())
}

// replica is s summarised as this replica's row of the fleet.
func (p *Page) replica(s Snapshot) ReplicaRow {
	r := ReplicaRow{ID: p.o.ID, Version: s.Build.Version, Commit: s.Build.Commit, Started: s.Started, Updated: s.Time, FeedsHeld: []string{}}
	var hits, lookups uint64
	for _, t := range s.Tenants {
		r.Requests += t.Requests
		r.ClientErrors += t.ClientErrors
		r.ServerErrors += t.ServerErrors
		hits += t.Hits
		lookups += t.Hits + t.Misses
	}
	r.HitRatio = ratio(hits, lookups)
	for _, b := range s.Backends {
		for _, br := range b.Breakers {
			if br.State == "open" {
				r.OpenBreakers++
			}
		}
	}
	if s.Shared != nil {
		r.Shared, r.PurgesPending = s.Shared.State, s.Shared.PurgesPending
	}
	for _, f := range s.Feeds {
		if f.State != "held elsewhere" {
			r.FeedsHeld = append(r.FeedsHeld, f.Backend+"/"+f.Feed)
		}
	}
	return r
}

// fleet adds the fleet's replicas to s: this one from s itself, the
// others from their records.
func (p *Page) fleet(ctx context.Context, s *Snapshot) {
	if p.o.Fleet == nil {
		return
	}
	self := p.replica(*s)
	self.Self = true
	s.Fleet = []ReplicaRow{self}
	recs, err := p.o.Fleet.Replicas(ctx, s.Time)
	if err != nil {
		s.FleetError = "the other replicas cannot be read: " + err.Error()
		return
	}
	for _, id := range slices.Sorted(maps.Keys(recs)) {
		if id == p.o.ID {
			continue
		}
		var r ReplicaRow
		if err := json.Unmarshal(recs[id], &r); err != nil {
			r = ReplicaRow{Error: "unreadable status record: " + err.Error()}
		}
		r.ID, r.Self = id, false
		s.Fleet = append(s.Fleet, r)
	}
	slices.SortFunc(s.Fleet, func(a, b ReplicaRow) int { return cmp.Compare(a.ID, b.ID) })
}

//go:embed page.html
var pageHTML string

var pageTemplate = template.Must(template.New("status").Funcs(template.FuncMap{
	"pct": func(x float64) string { return strconv.FormatFloat(100*x, 'f', 1, 64) + "%" },
	"ms":  func(x float64) string { return strconv.FormatFloat(1000*x, 'f', 2, 64) + " ms" },
	"bytes": func(n int64) string {
		units := []string{"B", "KiB", "MiB", "GiB"}
		f, i := float64(n), 0
		for f >= 1024 && i < len(units)-1 {
			f /= 1024
			i++
		}
		return strconv.FormatFloat(f, 'f', min(i, 1), 64) + " " + units[i]
	},
	"when": func(t any) string {
		var at time.Time
		switch t := t.(type) {
		case time.Time:
			at = t
		case *time.Time:
			if t == nil {
				return ""
			}
			at = *t
		}
		if at.IsZero() {
			return ""
		}
		return at.UTC().Format("2006-01-02 15:04:05Z")
	},
	"statecls": func(s string) string { return strings.ReplaceAll(s, " ", "-") },
	"join":     func(s []string) string { return strings.Join(s, ", ") },
	"breakers": breakersText,
}).Parse(pageHTML))

// breakersText is a backend's breakers cell: the backend-wide breaker and
// each tenant's that is not closed, with the failure that opened it (as
// the page's script draws it).
func breakersText(bs []BreakerRow) string {
	var parts []string
	for _, b := range bs {
		if b.State == "closed" && b.Tenant != "" {
			continue
		}
		s := cmp.Or(b.Tenant, "backend") + ": " + b.State
		if b.RetryAfterSeconds > 0 {
			s += " (retry in " + strconv.FormatFloat(math.Ceil(b.RetryAfterSeconds), 'f', 0, 64) + "s)"
		}
		if b.State != "closed" && b.LastError != "" {
			s += " after: " + b.LastError
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// ServeHTTP implements http.Handler.
func (p *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	snap := p.Snapshot()
	p.fleet(r.Context(), &snap)
	if strings.HasSuffix(r.URL.Path, ".json") {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(snap)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	// The page's own script and style only; no framing.
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; frame-ancestors 'none'")
	path := r.URL.Path
	// The page carries the data: curl and text browsers see it, and so
	// does a browser whose script cannot fetch. Without JavaScript it
	// refreshes itself, at most every 10s.
	_ = pageTemplate.Execute(w, map[string]any{
		"Build":           p.o.Build,
		"S":               snap,
		"JSON":            path[strings.LastIndexByte(path, '/')+1:] + ".json",
		"RefreshMS":       p.o.Refresh.Milliseconds(),
		"NoScriptRefresh": int(math.Ceil(max(p.o.Refresh, 10*time.Second).Seconds())),
		"Fleet":           p.o.Fleet != nil,
		"PublishSeconds":  p.o.Publish.Seconds(),
		"FleetTTLSeconds": (3 * p.o.Publish).Seconds(),
	})
}

// Snapshot is what the page shows, as of Time.
type Snapshot struct {
	Time     time.Time       `json:"time"`
	Started  time.Time       `json:"started"`
	Build    telemetry.Build `json:"build"`
	Tenants  []TenantRow     `json:"tenants"`
	Backends []BackendRow    `json:"backends"`
	// Unauthenticated counts the API requests answered without a tenant
	// (401, throttled before authentication).
	Unauthenticated *TenantRow `json:"unauthenticated,omitempty"`
	Cache           *CacheRow  `json:"cache,omitempty"`
	Shared          *SharedRow `json:"shared,omitempty"`
	Disk            *DiskRow   `json:"disk,omitempty"`
	Feeds           []FeedRow  `json:"feeds"`
	Events          []EventRow `json:"events"`
	// Fleet is every replica of the fleet, this one (Self) included, by
	// ID; only with Options.Fleet. FleetError says why the others are
	// missing.
	Fleet      []ReplicaRow `json:"fleet,omitempty"`
	FleetError string       `json:"fleet_error,omitempty"`
}

// ReplicaRow is one replica of the fleet, as it last published itself.
type ReplicaRow struct {
	ID      string    `json:"id"`
	Self    bool      `json:"self,omitempty"`
	Version string    `json:"version"`
	Commit  string    `json:"commit"`
	Started time.Time `json:"started"`
	// Updated is when the replica took the figures.
	Updated time.Time `json:"updated"`
	// Requests, ClientErrors, ServerErrors and HitRatio are over its
	// tenants since its start.
	Requests     uint64  `json:"requests"`
	ClientErrors uint64  `json:"client_errors"`
	ServerErrors uint64  `json:"server_errors"`
	HitRatio     float64 `json:"hit_ratio"`
	OpenBreakers int     `json:"open_breakers"`
	// Shared is its shared tier's state; PurgesPending the purges it has
	// not recorded for the fleet yet.
	Shared        string `json:"shared"`
	PurgesPending int64  `json:"purges_pending"`
	// FeedsHeld are the change feeds it runs (backend/feed).
	FeedsHeld []string `json:"feeds_held"`
	// Error: its record could not be read.
	Error string `json:"error,omitempty"`
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
	// ClientErrors counts 4xx answers, among them Unauthorized (401) and
	// TooMany (429); Invalid the answers with the spec's error list
	// (criteria errors, answered with HTTP 200).
	ClientErrors uint64 `json:"client_errors"`
	Unauthorized uint64 `json:"unauthorized"`
	TooMany      uint64 `json:"too_many"`
	Invalid      uint64 `json:"invalid"`
	// P50 and P99 are the median and 99th percentile of the time to
	// answer over the last one to two minutes (RecentRequests requests),
	// in seconds, estimated from the request-duration buckets; 0 without
	// recent requests.
	RecentRequests uint64  `json:"recent_requests"`
	P50            float64 `json:"p50_seconds"`
	P99            float64 `json:"p99_seconds"`
}

// SharedRow is the shared tier (cache.shared, Redis).
type SharedRow struct {
	// State: "synced", "syncing" (reads miss until every recorded purge
	// is read), or "breaker open" (Redis unreachable: no reads or writes).
	State         string  `json:"state"`
	HitRatio      float64 `json:"hit_ratio"`
	Errors        uint64  `json:"errors"`
	PurgesPending int64   `json:"purges_pending"`
}

// DiskRow is the disk tier (cache.disk).
type DiskRow struct {
	// State: "ok", or "disabled" (a purge could not be recorded: it
	// serves nothing more).
	State    string  `json:"state"`
	Entries  int64   `json:"entries"`
	Bytes    int64   `json:"bytes"`
	HitRatio float64 `json:"hit_ratio"`
	Errors   uint64  `json:"errors"`
}

// FeedRow is a change feed.
type FeedRow struct {
	Backend string `json:"backend"`
	Feed    string `json:"feed"`
	// State: "up", "down", or "held elsewhere" (another replica of the
	// fleet runs it).
	State      string     `json:"state"`
	Changes    uint64     `json:"changes"`
	Gaps       uint64     `json:"gaps"`
	LagSeconds float64    `json:"lag_seconds"`
	LastEvent  *time.Time `json:"last_event,omitempty"`
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

// Snapshot reads every source once: this process's figures, without the
// fleet's other replicas.
func (p *Page) Snapshot() Snapshot {
	s := Snapshot{Time: p.o.Now(), Started: p.started, Build: p.o.Build, Tenants: []TenantRow{}, Backends: []BackendRow{}, Feeds: []FeedRow{}, Events: []EventRow{}}
	backends := map[string]*BackendRow{}
	backend := func(name string) *BackendRow {
		if backends[name] == nil {
			backends[name] = &BackendRow{Backend: name, Breakers: []BreakerRow{}}
		}
		return backends[name]
	}
	if p.o.Traffic != nil {
		for _, t := range p.o.Traffic.Tenants() {
			s.Tenants = append(s.Tenants, tenantRow(t))
			backend(t.Backend)
		}
		if u, ok := p.o.Traffic.(Unauthenticated); ok {
			if t := u.Unauthenticated(); t.Requests > 0 {
				row := tenantRow(t)
				s.Unauthenticated = &row
			}
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
	if p.o.Shared != nil {
		st := p.o.Shared()
		s.Shared = &SharedRow{State: SharedState(st.Synced, st.BreakerOpen), HitRatio: ratio(st.Hits, st.Hits+st.Misses),
			Errors: st.Errors, PurgesPending: st.PurgesPending}
	}
	if p.o.Disk != nil {
		st := p.o.Disk()
		s.Disk = &DiskRow{State: "ok", Entries: st.Entries, Bytes: st.Bytes, HitRatio: ratio(st.Hits, st.Hits+st.Misses), Errors: st.Errors}
		if st.Disabled {
			s.Disk.State = "disabled"
		}
	}
	if p.o.Feeds != nil {
		for _, f := range p.o.Feeds.Feeds() {
			row := FeedRow{Backend: f.Backend, Feed: f.Feed, State: "down", Changes: f.Changes, Gaps: f.Gaps, LagSeconds: f.Lag.Seconds()}
			switch {
			case !f.Held:
				row.State = "held elsewhere"
			case f.Up:
				row.State = "up"
			}
			if !f.LastEvent.IsZero() {
				at := f.LastEvent
				row.LastEvent = &at
			}
			s.Feeds = append(s.Feeds, row)
		}
	}
	if p.o.Events != nil {
		for _, e := range p.o.Events.RecentEvents() {
			s.Events = append(s.Events, EventRow{Time: e.Time, Kind: e.Kind, Detail: e.Detail, Error: e.Err})
		}
	}
	return s
}

func tenantRow(t telemetry.TenantStats) TenantRow {
	row := TenantRow{Tenant: t.Tenant, Backend: t.Backend, Requests: t.Requests, Misses: t.Misses, ServerErrors: t.ServerErrors,
		Hits: t.Hits + t.Stale + t.StaleIfError + t.Negative, Stale: t.Stale + t.StaleIfError,
		ClientErrors: t.ClientErrors, Unauthorized: t.Unauthorized, TooMany: t.TooMany, Invalid: t.Invalid,
		RecentRequests: t.Recent.Count(), P50: t.Recent.Quantile(0.5), P99: t.Recent.Quantile(0.99)}
	row.HitRatio = ratio(row.Hits, row.Hits+t.Misses+t.Bypass)
	return row
}

// SharedState is the shared tier's state as the page shows it: synced,
// breaker open or syncing, from the tier's Synced and BreakerOpen.
func SharedState(synced, breakerOpen bool) string {
	switch {
	case breakerOpen:
		return "breaker open"
	case !synced:
		return "syncing"
	}
	return "synced"
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
