package telemetry

import (
	"maps"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"listingproxy/cache/disktier"
	"listingproxy/cache/redistier"
	"listingproxy/upstream"
	"listingproxy/upstream/crm"
)

// readier is a backend that may not be ready to serve yet (sqlstore while
// its database has not answered since start-up).
type readier interface{ Ready() error }

// WatchBackendReady registers listingproxy_backend_ready{backend}: 1 when
// the backend can serve, 0 while it cannot yet (a backend with a Ready
// method that fails: a SQL database that has not answered since
// start-up). Breaker states are WatchBreakers'.
func (m *Metrics) WatchBackendReady(backends map[string]upstream.Backend) {
	for _, name := range slices.Sorted(maps.Keys(backends)) {
		b := backends[name]
		g := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "listingproxy_backend_ready",
			Help:        "1 when the backend can serve, 0 while it cannot yet (a SQL database that has not answered since start-up).",
			ConstLabels: prometheus.Labels{"backend": name},
		}, func() float64 {
			if rd, ok := b.(readier); ok && rd.Ready() != nil {
				return 0
			}
			return 1
		})
		m.watch("listingproxy_backend_ready of backend "+name, g)
	}
}

// crmFlaws are the tolerated flaws of CRM answers, by their label.
var crmFlaws = []struct {
	name string
	read func(crm.Stats) int64
}{
	{"bad_value", func(s crm.Stats) int64 { return s.BadValues }},
	{"mislabelled_content_type", func(s crm.Stats) int64 { return s.Mislabelled }},
	{"not_utf8", func(s crm.Stats) int64 { return s.Repaired }},
	{"xml_1_1", func(s crm.Stats) int64 { return s.XML11 }},
	{"ignored_paging", func(s crm.Stats) int64 { return s.PagedHere }},
}

// WatchCRM registers a CRM backend's families, read from stats
// (crm.Client.Stats) at each scrape: its decode budget in use and waits
// for it, listingproxy_crm_tolerated_total{backend,flaw} (the flaws of
// answers that were served anyway, docs/crm.md "Tolerated flaws", each
// also logged as a warning) and listingproxy_crm_panics_total{backend}
// (answers whose reading panicked: listingproxy's bug, logged with its
// stack).
func (m *Metrics) WatchCRM(backend string, stats func() crm.Stats) {
	cs := []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "listingproxy_crm_decoding_bytes",
			Help:        "Bytes of CRM answers being decoded now: the part of max_decoding_bytes granted.",
			ConstLabels: prometheus.Labels{"backend": backend},
		}, func() float64 { return float64(stats().DecodingBytes) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "listingproxy_crm_decode_budget_waits_total",
			Help:        "CRM answers that had to wait for room in max_decoding_bytes (a wait that outlasts the timeout is a 503 counted by no breaker).",
			ConstLabels: prometheus.Labels{"backend": backend},
		}, func() float64 { return float64(stats().BudgetWaits) }),
	}
	for _, f := range crmFlaws {
		cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "listingproxy_crm_tolerated_total",
			Help:        "Flaws of CRM answers that were served anyway: a value that could not be read, a content type that is not XML, bytes that are not UTF-8, an XML 1.1 declaration (read as 1.0), a list with more records than its limit (paged here).",
			ConstLabels: prometheus.Labels{"backend": backend, "flaw": f.name},
		}, func() float64 { return float64(f.read(stats())) }))
	}
	cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name:        "listingproxy_crm_panics_total",
		Help:        "CRM answers whose reading panicked: a bug of listingproxy (logged with its stack), not counted against the CRM's breakers.",
		ConstLabels: prometheus.Labels{"backend": backend},
	}, func() float64 { return float64(stats().Panics) }))
	m.watch("CRM families of backend "+backend, cs...)
}

// WatchCappedLists registers listingproxy_lists_capped_total: backend
// lists cut at max_results, read from capped (proxy.Server.CappedLists)
// at each scrape; each is also logged.
func (m *Metrics) WatchCappedLists(capped func() int64) {
	m.watch("listingproxy_lists_capped_total", prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "listingproxy_lists_capped_total",
		Help: "Backend lists cut at max_results: the limit was the cap (the client asked for more, or gave none) and the list came back full.",
	}, func() float64 { return float64(capped()) }))
}

// WatchWarm registers the warm-up's counters (proxy.Server.WarmStats),
// read at each scrape: listingproxy_cache_warm_targets_total{result}.
func (m *Metrics) WatchWarm(stats func() (done, failed, skipped uint64)) {
	for _, r := range []struct {
		result string
		pick   func(d, f, s uint64) uint64
	}{
		{"done", func(d, _, _ uint64) uint64 { return d }},
		{"failed", func(_, f, _ uint64) uint64 { return f }},
		{"skipped", func(_, _, s uint64) uint64 { return s }},
	} {
		m.watch("listingproxy_cache_warm_targets_total", prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "listingproxy_cache_warm_targets_total",
			Help:        "Requests the warm-up replayed (after a start or a hard purge), by result: done (filled), failed (an error; the entry stays cold), skipped (the user is gone, or the key was fresh already).",
			ConstLabels: prometheus.Labels{"result": r.result},
		}, func() float64 { return float64(r.pick(stats())) }))
	}
}

// SharedCacheMetrics are the families of the shared cache tier
// (cache/redistier): the latency of its Redis operations, observed by
// Observe (redistier.Options.Observe), and its counters and states, read
// from the tier's Stats at each scrape once registered.
type SharedCacheMetrics struct {
	latency *prometheus.HistogramVec
}

// NewSharedCacheMetrics returns the shared tier's families, not yet
// registered: the tier takes Observe before it exists, Register its Stats
// after.
func NewSharedCacheMetrics() *SharedCacheMetrics {
	return &SharedCacheMetrics{latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "listingproxy_shared_cache_operation_seconds",
		Help:    "Duration of Redis operations of the shared cache tier, by operation and result (ok, error).",
		Buckets: []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .25},
	}, []string{"op", "result"})}
}

// Observe records one Redis operation of the tier: its name, duration and
// error (nil: ok).
func (s *SharedCacheMetrics) Observe(op string, d time.Duration, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	s.latency.WithLabelValues(op, result).Observe(d.Seconds())
}

// Register registers the shared tier's families on reg, read from stats
// (redistier.Tier.Stats) at each scrape.
func (s *SharedCacheMetrics) Register(reg prometheus.Registerer, stats func() redistier.Stats) error {
	counter := func(name, help string, f func(redistier.Stats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(f(stats())) })
	}
	return register(reg, []prometheus.Collector{
		s.latency,
		counter("listingproxy_shared_cache_hits_total", "Second-tier reads that found an entry.", func(s redistier.Stats) uint64 { return s.Hits }),
		counter("listingproxy_shared_cache_misses_total", "Second-tier reads that found none.", func(s redistier.Stats) uint64 { return s.Misses }),
		counter("listingproxy_shared_cache_errors_total", "Redis operations that failed (no answer within their deadline, Redis down, breaker open).", func(s redistier.Stats) uint64 { return s.Errors }),
		counter("listingproxy_shared_cache_slow_total", "Redis operations a request stopped waiting for at cache.shared.timeout; each went on, and counts as an error only if it failed.", func(s redistier.Stats) uint64 { return s.Slow }),
		counter("listingproxy_shared_cache_writes_total", "Entries written to the second tier.", func(s redistier.Stats) uint64 { return s.Sets }),
		counter("listingproxy_shared_cache_oversize_total", "Entries too large for the second tier (cache.shared.max_entry_bytes): not written, or found in Redis and not read.", func(s redistier.Stats) uint64 { return s.Oversize }),
		counter("listingproxy_shared_cache_damaged_total", "Second-tier entries read whose checksum or structure was wrong: a miss each, never served.", func(s redistier.Stats) uint64 { return s.Damaged }),
		counter("listingproxy_shared_cache_lease_waits_total", "Fills that waited for another replica's fill of the same key.", func(s redistier.Stats) uint64 { return s.LeaseWaits }),
		counter("listingproxy_shared_cache_peer_fills_total", "Fills answered by another replica's fill.", func(s redistier.Stats) uint64 { return s.PeerFills }),
		counter("listingproxy_shared_cache_purges_sent_total", "Purges recorded for the fleet.", func(s redistier.Stats) uint64 { return s.PurgesSent }),
		counter("listingproxy_shared_cache_purges_received_total", "Purges received from the fleet (this replica's own included).", func(s redistier.Stats) uint64 { return s.PurgesReceived }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "listingproxy_shared_cache_breaker_open",
			Help: "1 while the shared tier's breaker refuses Redis operations (the replica caches alone).",
		}, func() float64 {
			if stats().BreakerOpen {
				return 1
			}
			return 0
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "listingproxy_shared_cache_purges_pending",
			Help: "Purges applied on this replica and not yet recorded for the fleet in Redis; the replica retries them until they are.",
		}, func() float64 { return float64(stats().PurgesPending) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "listingproxy_shared_cache_synced",
			Help: "1 once the replica has read every purge recorded in Redis since its subscription (re)started; 0 before, while it serves nothing it reads from Redis.",
		}, func() float64 {
			if stats().Synced {
				return 1
			}
			return 0
		}),
	})
}

// WatchDiskCache registers the families of the disk tier
// (cache/disktier), read from stats (disktier.Tier.Stats) at each scrape.
func (m *Metrics) WatchDiskCache(stats func() disktier.Stats) {
	counter := func(name, help string, f func(disktier.Stats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(f(stats())) })
	}
	gauge := func(name, help string, f func(disktier.Stats) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return f(stats()) })
	}
	m.watch("disk cache families",
		counter("listingproxy_disk_cache_hits_total", "Disk-tier reads (first-tier misses) that found an entry.", func(s disktier.Stats) uint64 { return s.Hits }),
		counter("listingproxy_disk_cache_misses_total", "Disk-tier reads that found none (absent, expired, another key's, damaged).", func(s disktier.Stats) uint64 { return s.Misses }),
		counter("listingproxy_disk_cache_writes_total", "Entries written to the disk tier.", func(s disktier.Stats) uint64 { return s.Writes }),
		counter("listingproxy_disk_cache_drops_total", "Fills not written to disk because the writer's queue was full.", func(s disktier.Stats) uint64 { return s.Drops }),
		counter("listingproxy_disk_cache_oversize_total", "Fills not written to disk because they exceed a quarter of cache.disk.max_bytes.", func(s disktier.Stats) uint64 { return s.Oversize }),
		counter("listingproxy_disk_cache_evictions_total", "Entries deleted from disk to stay within cache.disk.max_bytes (the expired, then the least recently used).", func(s disktier.Stats) uint64 { return s.Evictions }),
		counter("listingproxy_disk_cache_errors_total", "Disk-tier reads and write batches that failed.", func(s disktier.Stats) uint64 { return s.Errors }),
		counter("listingproxy_disk_cache_damaged_total", "Disk-tier entries read whose checksum or structure was wrong: a miss each, never served, and deleted.", func(s disktier.Stats) uint64 { return s.Damaged }),
		counter("listingproxy_disk_cache_purges_total", "Purges recorded on disk.", func(s disktier.Stats) uint64 { return s.Purges }),
		gauge("listingproxy_disk_cache_bytes", "Bytes of the entries on disk, as counted against cache.disk.max_bytes.", func(s disktier.Stats) float64 { return float64(s.Bytes) }),
		gauge("listingproxy_disk_cache_entries", "Entries on disk.", func(s disktier.Stats) float64 { return float64(s.Entries) }),
		gauge("listingproxy_disk_cache_queued_bytes", "Bytes of fills waiting to be written to disk.", func(s disktier.Stats) float64 { return float64(s.QueuedBytes) }),
		gauge("listingproxy_disk_cache_disabled", "1 once a purge could not be recorded on disk: the disk tier deleted its files and is off until a restart.", func(s disktier.Stats) float64 {
			if s.Disabled {
				return 1
			}
			return 0
		}),
	)
}

// register registers every collector of cs on reg, stopping at the first
// error.
func register(reg prometheus.Registerer, cs []prometheus.Collector) error {
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// WatchHTTP2Guard registers listingproxy_http2_connections_closed_total:
// HTTP/2 connections closed for sending control frames (PING, SETTINGS,
// PRIORITY, RST_STREAM) faster than their bound (internal/h2guard).
func (m *Metrics) WatchHTTP2Guard(closed func() uint64) {
	m.watch("listingproxy_http2_connections_closed_total", prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "listingproxy_http2_connections_closed_total",
		Help: "HTTP/2 connections on the public TLS listener closed because their client sent control frames (PING, SETTINGS, PRIORITY, RST_STREAM) faster than the bound.",
	}, func() float64 { return float64(closed()) }))
}

// WatchConnLimit registers listingproxy_connections_refused_total: public
// connections closed at accept because their client address held too many
// (reason too_many) or opened them too fast (too_fast), read from refused
// (internal/connlimit's Stats) at each scrape.
func (m *Metrics) WatchConnLimit(refused func() (tooMany, tooFast uint64)) {
	for _, r := range []struct {
		reason string
		v      func() uint64
	}{
		{"too_many", func() uint64 { n, _ := refused(); return n }},
		{"too_fast", func() uint64 { _, n := refused(); return n }},
	} {
		m.watch("listingproxy_connections_refused_total", prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "listingproxy_connections_refused_total",
			Help:        "Public connections closed at accept, before any handshake: their client address held too many open (too_many) or opened them too fast (too_fast).",
			ConstLabels: prometheus.Labels{"reason": r.reason},
		}, func() float64 { return float64(r.v()) }))
	}
}
