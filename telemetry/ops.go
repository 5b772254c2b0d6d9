package telemetry

import (
	"cmp"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Build names the running binary, from the build information the Go
// toolchain embeds (debug.ReadBuildInfo).
type Build struct {
	// Version is the main module's version: a tag for `go install
	// module@vX`, "(devel)" for a build from a checkout.
	Version string
	// Commit is the VCS revision the binary was built from ("unknown" when
	// built outside a repository or with -buildvcs=false), with "-dirty"
	// when the work tree had changes.
	Commit string
	// GoVersion is the toolchain that built it.
	GoVersion string
}

// commit is the revision set at link time, for builds that have no VCS
// information: the container image is built from a context without .git,
// so the Dockerfile passes its COMMIT build argument as
// -ldflags "-X listingproxy/telemetry.commit=...". Empty: the toolchain's.
var commit string

// ReadBuild returns the running binary's Build.
func ReadBuild() Build {
	b := Build{Version: "(devel)", Commit: "unknown", GoVersion: runtime.Version()}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	b.Version = cmp.Or(info.Main.Version, b.Version)
	b.GoVersion = cmp.Or(info.GoVersion, b.GoVersion)
	dirty := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Commit = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && b.Commit != "unknown" {
		b.Commit += "-dirty"
	}
	if commit != "" && b.Commit == "unknown" {
		b.Commit = commit
	}
	return b
}

// Event is a recent operator-visible change: a configuration reload or a
// cache purge.
type Event struct {
	Time time.Time
	// Kind is "reload" or "purge".
	Kind string
	// Detail says what happened ("source=admin kind=tenant mode=hard
	// tenant=harbour").
	Detail string
	// Err is why a reload was rejected; "" on success.
	Err string
}

// recentEvents is how many events RecentEvents keeps.
const recentEvents = 20

type eventLog struct {
	mu     sync.Mutex
	limit  int
	events []Event // oldest first
}

func (l *eventLog) add(e Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.events) == l.limit {
		l.events = slices.Delete(l.events, 0, 1)
	}
	l.events = append(l.events, e)
}

// RecentEvents returns the last reloads and purges, newest first.
func (m *Metrics) RecentEvents() []Event {
	m.events.mu.Lock()
	defer m.events.mu.Unlock()
	out := slices.Clone(m.events.events)
	slices.Reverse(out)
	return out
}

// ConfigLoaded records the configuration loaded at start, at: the reload
// gauges start from it, without counting a reload.
func (m *Metrics) ConfigLoaded(at time.Time) {
	m.lastReloadOK.Set(1)
	m.lastReloadTime.Set(float64(at.UnixMilli()) / 1000)
}

// ConfigReloaded counts a configuration reload at at; err is why it was
// rejected (the running configuration kept), nil for success.
func (m *Metrics) ConfigReloaded(at time.Time, err error) {
	e := Event{Time: at, Kind: "reload", Detail: "configuration reloaded"}
	if err != nil {
		m.ConfigReloads.WithLabelValues("failure").Inc()
		m.lastReloadOK.Set(0)
		e.Detail, e.Err = "reload rejected; running configuration kept", err.Error()
	} else {
		m.ConfigReloads.WithLabelValues("success").Inc()
		m.ConfigLoaded(at)
	}
	m.events.add(e)
}

// Purge describes one cache purge for Purged.
type Purge struct {
	// Source is who asked: "admin" (POST /cache/purge) or "notify" (a
	// backend's change notification).
	Source string
	// Kind is what was named: "tenant", "resource", "all", ...
	Kind string
	// Mode is "hard" (entries dropped) or "soft" (marked stale).
	Mode string
	// Tenant and Target (a resource, URL or entity) for the event log;
	// never metric labels.
	Tenant, Target string
}

// Purged counts a purge made at at.
func (m *Metrics) Purged(at time.Time, p Purge) {
	m.Purges.WithLabelValues(p.Source, p.Kind, p.Mode).Inc()
	detail := "source=" + p.Source + " kind=" + p.Kind + " mode=" + p.Mode
	if p.Tenant != "" {
		detail += " tenant=" + p.Tenant
	}
	if p.Target != "" {
		detail += " target=" + p.Target
	}
	m.events.add(Event{Time: at, Kind: "purge", Detail: detail})
}

// TenantStats are one tenant's API requests since start.
type TenantStats struct {
	Tenant, Backend string
	// Requests counts answered requests of authenticated callers.
	Requests uint64
	// By cache outcome; Uncached counts requests answered before the cache
	// (criteria and permission errors).
	Hits, Stale, StaleIfError, Misses, Negative, Bypass, Uncached uint64
	// ServerErrors counts 5xx answers (backend failures, open breakers).
	ServerErrors uint64
	// ClientErrors counts 4xx answers, among them Unauthorized (401) and
	// TooMany (429); Invalid counts answers with the spec's error list
	// (criteria errors: HTTP 200, so no status code shows them).
	ClientErrors, Unauthorized, TooMany, Invalid uint64
	// Latency is the distribution of the time to answer since start;
	// Recent the same over the last one to two minutes (the minute under
	// way and the one before).
	Latency, Recent Histogram
}

// Histogram is a distribution in fixed buckets: Counts[i] observations at
// most Bounds[i] (and above Bounds[i-1]); the last count, one past Bounds,
// those above every bound.
type Histogram struct {
	Bounds []float64
	Counts []uint64
}

// Count is the number of observations.
func (h Histogram) Count() uint64 {
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// Quantile estimates the q-quantile (0 < q <= 1) as Prometheus's
// histogram_quantile does: linearly within the bucket it falls in, from
// 0 for the first; the largest bound when it falls above them all. It is 0
// without observations.
func (h Histogram) Quantile(q float64) float64 {
	total := h.Count()
	if total == 0 || len(h.Bounds) == 0 {
		return 0
	}
	rank := q * float64(total)
	var seen float64
	for i, c := range h.Counts {
		if c == 0 {
			continue
		}
		if seen+float64(c) >= rank {
			if i >= len(h.Bounds) {
				return h.Bounds[len(h.Bounds)-1]
			}
			lower := 0.0
			if i > 0 {
				lower = h.Bounds[i-1]
			}
			return lower + (h.Bounds[i]-lower)*(rank-seen)/float64(c)
		}
		seen += float64(c)
	}
	return h.Bounds[len(h.Bounds)-1]
}

// outcomeNames are the cache outcomes a TenantStats counts, in the order of
// tenantCounters.outcomes; "" (no cache) is last.
var outcomeNames = [...]string{"hit", "stale", "stale-if-error", "miss", "negative", "bypass", ""}

type tenantCounters struct {
	tenant, backend string
	outcomes        [len(outcomeNames)]atomic.Uint64
	serverErrors    atomic.Uint64
	clientErrors    atomic.Uint64
	unauthorized    atomic.Uint64
	tooMany         atomic.Uint64
	invalid         atomic.Uint64
	latency         [len(latencyBounds) + 1]atomic.Uint64
	// recent are the latencies of two minutes, by minute since epoch
	// modulo 2: the minute under way and the one before.
	recent [2]latencyWindow
}

// latencyWindow is the latencies of one minute. A minute's first request
// clears the window of two minutes before; a request counted in that
// instant may be lost, which a status page can afford.
type latencyWindow struct {
	minute atomic.Int64 // minutes since epoch, plus one (0: never used)
	counts [len(latencyBounds) + 1]atomic.Uint64
}

// add counts an observation in bucket b at minute (since epoch).
func (w *latencyWindow) add(minute int64, b int) {
	if m := w.minute.Load(); m != minute+1 && w.minute.CompareAndSwap(m, minute+1) {
		for i := range w.counts {
			w.counts[i].Store(0)
		}
	}
	w.counts[b].Add(1)
}

// tenantTraffic holds a tenantCounters per tenant: one map read (of a map
// copied when a tenant first appears) and a few atomic adds per request;
// Prometheus and the status page read them. The requests of no tenant
// (refused before authentication: 401, throttled) count in anonymous,
// which only the status page reads.
type tenantTraffic struct {
	m         cowMap[*tenantCounters] // by tenant
	anonymous tenantCounters
}

// counters returns tenant's counters, made with backend the first time.
func (t *tenantTraffic) counters(tenant, backend string) *tenantCounters {
	if c := t.m.get(tenant); c != nil {
		return c
	}
	return t.m.add(tenant, func() *tenantCounters { return &tenantCounters{tenant: tenant, backend: backend} })
}

// all is every tenant's counters, in no order.
func (t *tenantTraffic) all() []*tenantCounters { return t.m.values() }

// count counts a request of tenant ("": refused before authentication)
// answered at minute (since epoch), its duration in latency bucket b
// (latencyBucket).
func (t *tenantTraffic) count(tenant, backend, outcome string, status int, invalid bool, b int, minute int64) {
	c := &t.anonymous
	if tenant != "" {
		c = t.counters(tenant, backend)
	}
	c.count(outcome, status, invalid, b, minute)
}

// count counts a request of c's tenant answered at minute (since epoch),
// its duration in latency bucket b.
func (c *tenantCounters) count(outcome string, status int, invalid bool, b int, minute int64) {
	i := len(outcomeNames) - 1
	for j, name := range outcomeNames[:i] {
		if name == outcome {
			i = j
			break
		}
	}
	c.outcomes[i].Add(1)
	switch {
	case status >= 500:
		c.serverErrors.Add(1)
	case status >= 400:
		c.clientErrors.Add(1)
		switch status {
		case 401:
			c.unauthorized.Add(1)
		case 429:
			c.tooMany.Add(1)
		}
	}
	if invalid {
		c.invalid.Add(1)
	}
	c.latency[b].Add(1)
	c.recent[minute%2].add(minute, b)
}

// stats are c's counts; Recent holds the minutes now (since epoch) and the
// one before.
func (c *tenantCounters) stats(now int64) TenantStats {
	s := TenantStats{Tenant: c.tenant, Backend: c.backend, ServerErrors: c.serverErrors.Load(),
		ClientErrors: c.clientErrors.Load(), Unauthorized: c.unauthorized.Load(), TooMany: c.tooMany.Load(), Invalid: c.invalid.Load(),
		Latency: Histogram{Bounds: latencyBuckets, Counts: make([]uint64, len(c.latency))},
		Recent:  Histogram{Bounds: latencyBuckets, Counts: make([]uint64, len(c.latency))}}
	counts := []*uint64{&s.Hits, &s.Stale, &s.StaleIfError, &s.Misses, &s.Negative, &s.Bypass, &s.Uncached}
	for i := range c.outcomes {
		*counts[i] = c.outcomes[i].Load()
		s.Requests += *counts[i]
	}
	for i := range c.latency {
		s.Latency.Counts[i] = c.latency[i].Load()
	}
	for j := range c.recent {
		w := &c.recent[j]
		if m := w.minute.Load() - 1; m != now && m != now-1 {
			continue
		}
		for i := range w.counts {
			s.Recent.Counts[i] += w.counts[i].Load()
		}
	}
	return s
}

// minuteNow is the minute under way, since epoch (Middleware's clock).
func minuteNow() int64 { return int64(time.Since(epoch) / time.Minute) }

func (t *tenantTraffic) snapshot(now int64) []TenantStats {
	var out []TenantStats
	for _, c := range t.all() {
		out = append(out, c.stats(now))
	}
	slices.SortFunc(out, func(a, b TenantStats) int { return cmp.Compare(a.Tenant, b.Tenant) })
	return out
}

// Tenants returns each tenant's request counts since start, by tenant name.
// Tenants appear after their first request.
func (m *Metrics) Tenants() []TenantStats { return m.tenants.snapshot(minuteNow()) }

// Unauthenticated returns the counts of the API requests answered without
// a tenant: refused for missing or wrong credentials (401) or throttled
// before authentication (429). Its Tenant and Backend are "".
func (m *Metrics) Unauthenticated() TenantStats { return m.tenants.anonymous.stats(minuteNow()) }

var (
	descTenantRequests = prometheus.NewDesc("listingproxy_tenant_requests_total",
		`API requests of authenticated callers, by tenant, backend and cache outcome ("none": answered before the cache).`,
		[]string{"tenant", "backend", "cache"}, nil)
	descTenantErrors = prometheus.NewDesc("listingproxy_tenant_server_errors_total",
		"API requests answered with a 5xx (backend failure, open breaker), by tenant and backend.",
		[]string{"tenant", "backend"}, nil)
)

type tenantCollector struct{ t *tenantTraffic }

func (c *tenantCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descTenantRequests
	ch <- descTenantErrors
}

func (c *tenantCollector) Collect(ch chan<- prometheus.Metric) {
	for _, tc := range c.t.all() {
		for i, name := range outcomeNames {
			ch <- prometheus.MustNewConstMetric(descTenantRequests, prometheus.CounterValue,
				float64(tc.outcomes[i].Load()), tc.tenant, tc.backend, cmp.Or(name, "none"))
		}
		ch <- prometheus.MustNewConstMetric(descTenantErrors, prometheus.CounterValue,
			float64(tc.serverErrors.Load()), tc.tenant, tc.backend)
	}
}
