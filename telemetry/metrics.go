package telemetry

import (
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"listingproxy/cache"
	"listingproxy/upstream/breaker"
)

// Metrics is listingproxy's Prometheus metric set. Counters the cache and
// the breakers already keep are read at scrape time (WatchCache,
// WatchBreakers), so the hit path pays nothing for them; the rest are
// updated by the middleware, the backend decorator and BreakerTransition.
//
// The Watch methods record a family that does not register (a duplicate
// of one registered already) instead of returning it, so that a caller
// registering many checks once, with Err.
type Metrics struct {
	reg prometheus.Registerer
	// errs are the Watch methods' registration failures (Err); watchMu
	// guards them.
	watchMu sync.Mutex
	errs    []error

	// requests are listingproxy_http_requests_total and
	// listingproxy_http_request_duration_seconds (requests.go).
	requests requestMetrics

	// AuthFailures counts API requests with missing or wrong credentials.
	AuthFailures prometheus.Counter
	// BackendDuration observes backend call latency by backend and operation.
	BackendDuration *prometheus.HistogramVec
	// BackendErrors counts failed backend calls by backend, operation and
	// reason (timeout, canceled, error). Answers such as "not found" are
	// not errors.
	BackendErrors *prometheus.CounterVec
	// BreakerTransitions counts breaker state changes by backend, tenant
	// ("" for the backend-wide breaker), from and to.
	BreakerTransitions *prometheus.CounterVec
	// ConfigReloads counts configuration reloads by result (success,
	// failure); see ConfigReloaded.
	ConfigReloads *prometheus.CounterVec
	// Purges counts cache purges by source, kind and mode; see Purged.
	Purges *prometheus.CounterVec
	// TraceExportFailures counts span batches the trace exporter failed to
	// deliver (TraceOptions.ExportFailed); their spans are lost.
	TraceExportFailures prometheus.Counter

	// lastReload is the last successful load's time and whether the last
	// reload succeeded (listingproxy_config_last_reload_*).
	lastReloadOK   prometheus.Gauge
	lastReloadTime prometheus.Gauge

	tenants  tenantTraffic   // per-tenant counters (tenant.go)
	abuse    abuseCounters   // auth rejections and tenant rate limits (abuse.go)
	mistakes mistakeCounters // criteria errors and unknown parameters (mistakes.go)
	feeds    *feedMetrics    // change feeds (feeds.go)
	events   eventLog        // recent purges and reloads (tenant.go)
}

// latencyBuckets span a memory hit (tens of microseconds: the smallest
// bucket must sit below it, or hit latency cannot be seen) to a legacy
// backend at its timeout.
var latencyBuckets = latencyBounds[:]

var latencyBounds = [...]float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// NewMetrics creates the metric set and registers it, with the Go runtime
// and process collectors, on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		reg: reg,
		AuthFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "listingproxy_auth_failures_total",
			Help: "API requests refused for missing or wrong credentials.",
		}),
		BackendDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "listingproxy_backend_request_duration_seconds",
			Help:    "Backend call latency, by backend and operation.",
			Buckets: latencyBuckets,
		}, []string{"backend", "operation"}),
		BackendErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "listingproxy_backend_errors_total",
			Help: "Failed backend calls, by backend, operation and reason (timeout, canceled, error, internal: listingproxy's own bug, busy: a bound of the adapter's own was full, such as the CRM's decode budget).",
		}, []string{"backend", "operation", "reason"}),
		BreakerTransitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "listingproxy_breaker_transitions_total",
			Help: "Circuit breaker state changes, by backend, tenant (empty for the backend-wide breaker) and the states left and entered.",
		}, []string{"backend", "tenant", "from", "to"}),
		ConfigReloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "listingproxy_config_reloads_total",
			Help: "Configuration reloads (SIGHUP), by result: success or failure (the running configuration was kept).",
		}, []string{"result"}),
		lastReloadOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "listingproxy_config_last_reload_successful",
			Help: "1 if the last configuration load or reload succeeded, 0 if it was rejected.",
		}),
		lastReloadTime: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "listingproxy_config_last_reload_success_timestamp_seconds",
			Help: "Unix time of the last successful configuration load (start) or reload.",
		}),
		Purges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "listingproxy_cache_purges_total",
			Help: "Cache purges, by source (admin, notify), kind (tenant, resource, ...) and mode (hard, soft).",
		}, []string{"source", "kind", "mode"}),
		TraceExportFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "listingproxy_trace_export_failures_total",
			Help: "Span batches the trace exporter failed to deliver to the collector (their spans are lost).",
		}),
	}
	for _, result := range []string{"success", "failure"} {
		m.ConfigReloads.WithLabelValues(result)
	}
	m.abuse = newAbuseCounters()
	m.mistakes = newMistakeCounters()
	m.feeds = newFeedMetrics()
	m.events.limit = recentEvents
	b := ReadBuild()
	buildInfo := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "listingproxy_build_info",
		Help:        "Always 1; the labels name the running build (version, VCS commit, Go version).",
		ConstLabels: prometheus.Labels{"version": b.Version, "commit": b.Commit, "goversion": b.GoVersion},
	}, func() float64 { return 1 })
	for _, c := range append(append(append(m.abuse.collectors(), m.mistakes.collectors()...), m.feeds.collectors()...),
		&m.requests, m.AuthFailures, m.BackendDuration, m.BackendErrors, m.BreakerTransitions,
		m.ConfigReloads, m.lastReloadOK, m.lastReloadTime, m.Purges, m.TraceExportFailures, buildInfo, &tenantCollector{t: &m.tenants},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	) {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// BreakerTransition counts a breaker state change; it has the signature of
// breaker.Options.OnStateChange (and is safe to call under its lock).
func (m *Metrics) BreakerTransition(backend, tenant string, from, to breaker.State) {
	m.BreakerTransitions.WithLabelValues(backend, tenant, from.String(), to.String()).Inc()
}

// InitBreakers exports the transition counters of backend's breakers (the
// backend-wide one and each tenant's) at zero, so that rates and alerts
// work before their first transition.
func (m *Metrics) InitBreakers(backend string, tenants []string) {
	for _, tenant := range append([]string{""}, tenants...) {
		for _, t := range [][2]breaker.State{
			{breaker.StateClosed, breaker.StateOpen}, {breaker.StateOpen, breaker.StateHalfOpen},
			{breaker.StateHalfOpen, breaker.StateClosed}, {breaker.StateHalfOpen, breaker.StateOpen},
		} {
			m.BreakerTransitions.WithLabelValues(backend, tenant, t[0].String(), t[1].String())
		}
	}
}

// watch registers cs on m's registry, recording each failure, named by
// what, for Err.
func (m *Metrics) watch(what string, cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := m.reg.Register(c); err != nil {
			m.watchMu.Lock()
			m.errs = append(m.errs, fmt.Errorf("%s: %w", what, err))
			m.watchMu.Unlock()
			return
		}
	}
}

// Err reports the families the Watch methods could not register (each
// named, with the registry's reason), joined; nil when every one
// registered.
func (m *Metrics) Err() error {
	m.watchMu.Lock()
	defer m.watchMu.Unlock()
	return errors.Join(m.errs...)
}

// WatchCache registers the cache families, read from stats at each scrape.
func (m *Metrics) WatchCache(stats func() cache.Stats) {
	m.watch("cache families", &cacheCollector{stats: stats})
}

// WatchBreakers registers listingproxy_breaker_state and the bulkhead
// gauges, read from states (breaker.Registry.States) at each scrape.
func (m *Metrics) WatchBreakers(states func() []breaker.Status) {
	m.watch("breaker families", &breakerCollector{states: states})
}

// WatchLimits registers the concurrency limiters' families
// (listingproxy_backend_concurrency_*, _slot_waits_total,
// _slot_refusals_total), read from limits (breaker.Registry.Limits) at
// each scrape.
func (m *Metrics) WatchLimits(limits func() []breaker.LimitStatus) {
	m.watch("concurrency limit families", &limitCollector{limits: limits})
}

var (
	descLimit = prometheus.NewDesc("listingproxy_backend_concurrency_limit",
		"Concurrent calls a backend may have now: an adaptive limit's current value (it follows the backend's latency), else the fixed limit.", []string{"backend"}, nil)
	descLimitCeiling = prometheus.NewDesc("listingproxy_backend_concurrency_ceiling",
		"The highest a backend's concurrency limit may go (max_concurrency, max_open_conns).", []string{"backend"}, nil)
	descLimitInFlight = prometheus.NewDesc("listingproxy_backend_concurrency_in_flight",
		"Backend calls holding a concurrency slot.", []string{"backend"}, nil)
	descLimitWaiting = prometheus.NewDesc("listingproxy_backend_concurrency_waiting",
		"Backend calls waiting for a concurrency slot (at most breaker.queue_timeout each).", []string{"backend"}, nil)
	descSlotWaits = prometheus.NewDesc("listingproxy_backend_slot_waits_total",
		"Backend calls that had to wait for a concurrency slot, whether they got one or not.", []string{"backend"}, nil)
	descSlotRefusals = prometheus.NewDesc("listingproxy_backend_slot_refusals_total",
		"Waits for a concurrency slot that ended without one, by reason: queue_timeout (answered stale, else 503 with Retry-After), canceled (the caller went away). Counted by no breaker.",
		[]string{"backend", "reason"}, nil)
)

type limitCollector struct {
	limits func() []breaker.LimitStatus
}

func (c *limitCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLimit, descLimitCeiling, descLimitInFlight, descLimitWaiting, descSlotWaits, descSlotRefusals} {
		ch <- d
	}
}

func (c *limitCollector) Collect(ch chan<- prometheus.Metric) {
	for _, l := range c.limits() {
		ch <- prometheus.MustNewConstMetric(descLimit, prometheus.GaugeValue, float64(l.Limit), l.Backend)
		ch <- prometheus.MustNewConstMetric(descLimitCeiling, prometheus.GaugeValue, float64(l.Ceiling), l.Backend)
		ch <- prometheus.MustNewConstMetric(descLimitInFlight, prometheus.GaugeValue, float64(l.InFlight), l.Backend)
		ch <- prometheus.MustNewConstMetric(descLimitWaiting, prometheus.GaugeValue, float64(l.Waiting), l.Backend)
		ch <- prometheus.MustNewConstMetric(descSlotWaits, prometheus.CounterValue, float64(l.Waits), l.Backend)
		for _, reason := range []string{breaker.RefusedQueueTimeout, breaker.RefusedCanceled, breaker.RefusedBackground} {
			ch <- prometheus.MustNewConstMetric(descSlotRefusals, prometheus.CounterValue, float64(l.Refusals[reason]), l.Backend, reason)
		}
	}
}

var (
	descCacheLookups = prometheus.NewDesc("listingproxy_cache_lookups_total",
		"Cache lookups by outcome: hit, stale, stale-if-error, miss, negative, bypass.", []string{"outcome"}, nil)
	descCacheErrors = prometheus.NewDesc("listingproxy_cache_errors_total",
		"Lookups that found no body to serve (backend failure, open breaker, timeout).", nil, nil)
	descCacheLoads = prometheus.NewDesc("listingproxy_cache_loader_calls_total",
		"Backend fills run by the cache (foreground, background refresh, bypass).", nil, nil)
	descCacheWaiters = prometheus.NewDesc("listingproxy_cache_coalesced_waiters_total",
		"Lookups that joined a fill another request had started instead of calling the backend.", nil, nil)
	descCacheRefreshes = prometheus.NewDesc("listingproxy_cache_refreshes_total",
		"Background refreshes started (of stale entries and ahead of expiry).", nil, nil)
	descCacheRefreshesAhead = prometheus.NewDesc("listingproxy_cache_refreshes_ahead_total",
		"Refreshes of hot entries ahead of expiry, by result: started, or skipped_budget (the backend's refresh budget was spent).", []string{"result"}, nil)
	descCacheBytes = prometheus.NewDesc("listingproxy_cache_bytes",
		"Bytes held by the cache (bodies, gzip copies and overhead).", nil, nil)
	descCacheMaxBytes = prometheus.NewDesc("listingproxy_cache_max_bytes",
		"The cache's byte budget.", nil, nil)
	descCacheEntries = prometheus.NewDesc("listingproxy_cache_entries",
		"Entries held by the cache.", nil, nil)
	descCacheEvictions = prometheus.NewDesc("listingproxy_cache_evictions_total",
		"Entries evicted for room or expiry.", nil, nil)
	descCacheRejects = prometheus.NewDesc("listingproxy_cache_admission_rejects_total",
		"Entries refused at admission or too large to keep.", nil, nil)
	descBreakerState = prometheus.NewDesc("listingproxy_breaker_state",
		"1 for the state each circuit breaker is in, 0 for the others; by backend and tenant (empty for the backend-wide breaker).",
		[]string{"backend", "tenant", "state"}, nil)
	descBreakerLastSuccess = prometheus.NewDesc("listingproxy_breaker_last_success_timestamp_seconds",
		"Unix time of the latest success counted by each circuit breaker (absent before the first); by backend and tenant (empty for the backend-wide breaker).",
		[]string{"backend", "tenant"}, nil)
	descBreakerLastFailure = prometheus.NewDesc("listingproxy_breaker_last_failure_timestamp_seconds",
		"Unix time of the latest failure counted by each circuit breaker (absent before the first); the error is on the admin listener's /backends.",
		[]string{"backend", "tenant"}, nil)
	descBulkheadInFlight = prometheus.NewDesc("listingproxy_bulkhead_in_flight",
		"Backend calls of a tenant holding one of its bulkhead slots.", []string{"backend", "tenant"}, nil)
	descBulkheadSlots = prometheus.NewDesc("listingproxy_bulkhead_slots",
		"Concurrent backend calls a tenant may make: its share of the backend's concurrency limit in force.", []string{"backend", "tenant"}, nil)
)

type cacheCollector struct{ stats func() cache.Stats }

func (c *cacheCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descCacheLookups, descCacheErrors, descCacheLoads, descCacheWaiters, descCacheRefreshes, descCacheRefreshesAhead,
		descCacheBytes, descCacheMaxBytes, descCacheEntries, descCacheEvictions, descCacheRejects} {
		ch <- d
	}
}

func (c *cacheCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.stats()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v int64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
	}
	for _, o := range []struct {
		name string
		v    uint64
	}{
		{cache.Hit.String(), st.Hits}, {cache.Stale.String(), st.Stale}, {cache.StaleIfError.String(), st.StaleIfError},
		{cache.Miss.String(), st.Misses}, {cache.Negative.String(), st.Negative}, {cache.Bypass.String(), st.Bypass},
	} {
		counter(descCacheLookups, o.v, o.name)
	}
	counter(descCacheErrors, st.Errors)
	counter(descCacheLoads, st.LoaderCalls)
	counter(descCacheWaiters, st.Waiters)
	counter(descCacheRefreshes, st.Refreshes)
	counter(descCacheRefreshesAhead, st.RefreshesAhead, "started")
	counter(descCacheRefreshesAhead, st.RefreshesSkipped, "skipped_budget")
	gauge(descCacheBytes, st.Bytes)
	gauge(descCacheMaxBytes, st.MaxBytes)
	gauge(descCacheEntries, st.Entries+st.OverlayEntries)
	counter(descCacheEvictions, st.Evictions)
	counter(descCacheRejects, st.Rejections)
}

type breakerCollector struct {
	states func() []breaker.Status
}

func (c *breakerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descBreakerState
	ch <- descBreakerLastSuccess
	ch <- descBreakerLastFailure
	ch <- descBulkheadInFlight
	ch <- descBulkheadSlots
}

func (c *breakerCollector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.states() {
		for _, s := range breaker.AllStates {
			v := 0.0
			if s == st.State {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(descBreakerState, prometheus.GaugeValue, v, st.Backend, st.Tenant, s.String())
		}
		if !st.LastSuccess.IsZero() {
			ch <- prometheus.MustNewConstMetric(descBreakerLastSuccess, prometheus.GaugeValue, float64(st.LastSuccess.UnixNano())/1e9, st.Backend, st.Tenant)
		}
		if !st.LastFailure.IsZero() {
			ch <- prometheus.MustNewConstMetric(descBreakerLastFailure, prometheus.GaugeValue, float64(st.LastFailure.UnixNano())/1e9, st.Backend, st.Tenant)
		}
		if st.Slots > 0 {
			ch <- prometheus.MustNewConstMetric(descBulkheadInFlight, prometheus.GaugeValue, float64(st.InFlight), st.Backend, st.Tenant)
			ch <- prometheus.MustNewConstMetric(descBulkheadSlots, prometheus.GaugeValue, float64(st.Slots), st.Backend, st.Tenant)
		}
	}
}
