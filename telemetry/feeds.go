package telemetry

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// feedMetrics are the change feeds' families (package freshness reports
// to them through the FeedMetrics methods), labelled by backend and feed
// kind: a bounded set, one per configured feed.
type feedMetrics struct {
	up        *prometheus.GaugeVec
	held      *prometheus.GaugeVec
	changes   *prometheus.CounterVec
	gaps      *prometheus.CounterVec
	lag       *prometheus.GaugeVec
	lastEvent *prometheus.GaugeVec
	pollCalls *prometheus.CounterVec

	// state is the same, for the status page (Feeds).
	mu    sync.Mutex
	state map[[2]string]*FeedStats
}

// FeedStats is a change feed's state, as its families report it.
type FeedStats struct {
	Backend, Feed string
	// Up: it reads its source and is caught up. Held: this process runs
	// it (it holds the fleet's lease, or there is no fleet).
	Up, Held bool
	// Changes and Gaps since start; Lag is the last known change's delay
	// (0: none known); LastEvent the last change or heartbeat (zero: none).
	Changes, Gaps uint64
	Lag           time.Duration
	LastEvent     time.Time
}

// feed returns the state of backend's feed, created on first use; f.mu
// must be held.
func (f *feedMetrics) feed(backend, feed string) *FeedStats {
	k := [2]string{backend, feed}
	if f.state[k] == nil {
		f.state[k] = &FeedStats{Backend: backend, Feed: feed}
	}
	return f.state[k]
}

// Feeds returns every started change feed's state, by backend and feed.
func (m *Metrics) Feeds() []FeedStats {
	m.feeds.mu.Lock()
	defer m.feeds.mu.Unlock()
	out := make([]FeedStats, 0, len(m.feeds.state))
	for _, s := range m.feeds.state {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b FeedStats) int {
		return cmp.Or(cmp.Compare(a.Backend, b.Backend), cmp.Compare(a.Feed, b.Feed))
	})
	return out
}

func newFeedMetrics() *feedMetrics {
	l := []string{"backend", "feed"}
	return &feedMetrics{state: map[[2]string]*FeedStats{},
		up: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "listingproxy_change_feed_up",
			Help: "1 while a change feed reads its source and is caught up, 0 while it is down or reconnecting (a replica that does not hold the feed's fleet lease reports the last state it saw).",
		}, l),
		held: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "listingproxy_change_feed_held",
			Help: "1 while this process runs the change feed (it holds the fleet's lease, or there is no fleet), 0 while another replica does.",
		}, l),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "listingproxy_change_feed_changes_total",
			Help: "Changes a change feed reported (each becomes soft purges), gaps included.",
		}, l),
		gaps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "listingproxy_change_feed_gaps_total",
			Help: "Gaps a change feed reported (a (re)connection, a lost position): each soft-purges every tenant of the backend.",
		}, l),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "listingproxy_change_feed_lag_seconds",
			Help: "Time from a change at the source to its report, for the last change whose source time the feed knows.",
		}, l),
		lastEvent: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "listingproxy_change_feed_last_event_timestamp_seconds",
			Help: "Unix time of the last change or heartbeat a change feed reported.",
		}, l),
		pollCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "listingproxy_change_poll_backend_calls_total",
			Help: "List calls the change poller made to its backend (its cost), by backend.",
		}, []string{"backend"}),
	}
}

func (f *feedMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{f.up, f.held, f.changes, f.gaps, f.lag, f.lastEvent, f.pollCalls}
}

// FeedStarted exports a feed's series (down, not held, no changes) so that
// rates and alerts work before its first event.
func (m *Metrics) FeedStarted(backend, feed string) {
	m.feeds.up.WithLabelValues(backend, feed).Set(0)
	m.feeds.held.WithLabelValues(backend, feed).Set(0)
	m.feeds.changes.WithLabelValues(backend, feed)
	m.feeds.gaps.WithLabelValues(backend, feed)
	m.feeds.lag.WithLabelValues(backend, feed)
	m.feeds.lastEvent.WithLabelValues(backend, feed)
	if feed == "poll" {
		m.feeds.pollCalls.WithLabelValues(backend)
	}
	m.feeds.mu.Lock()
	m.feeds.feed(backend, feed)
	m.feeds.mu.Unlock()
}

// PollCall counts a list call the change poller of backend made.
func (m *Metrics) PollCall(backend string) { m.feeds.pollCalls.WithLabelValues(backend).Inc() }

// FeedHeld records whether this process runs the feed.
func (m *Metrics) FeedHeld(backend, feed string, held bool) {
	m.feeds.held.WithLabelValues(backend, feed).Set(b2f(held))
	m.feeds.mu.Lock()
	m.feeds.feed(backend, feed).Held = held
	m.feeds.mu.Unlock()
}

// FeedLive records a feed's state at now: up (err nil) or not.
func (m *Metrics) FeedLive(backend, feed string, err error, now time.Time) {
	m.feeds.up.WithLabelValues(backend, feed).Set(b2f(err == nil))
	if err == nil {
		m.feeds.lastEvent.WithLabelValues(backend, feed).Set(float64(now.UnixNano()) / 1e9)
	}
	m.feeds.mu.Lock()
	st := m.feeds.feed(backend, feed)
	st.Up = err == nil
	if err == nil {
		st.LastEvent = now
	}
	m.feeds.mu.Unlock()
}

// FeedChanged counts a change a feed reported at now; at is when it was
// made at the source (zero: unknown, no lag recorded).
func (m *Metrics) FeedChanged(backend, feed string, gap bool, at, now time.Time) {
	m.feeds.changes.WithLabelValues(backend, feed).Inc()
	if gap {
		m.feeds.gaps.WithLabelValues(backend, feed).Inc()
	}
	if !at.IsZero() {
		m.feeds.lag.WithLabelValues(backend, feed).Set(max(0, now.Sub(at).Seconds()))
	}
	m.feeds.lastEvent.WithLabelValues(backend, feed).Set(float64(now.UnixNano()) / 1e9)
	m.feeds.mu.Lock()
	st := m.feeds.feed(backend, feed)
	st.Changes++
	if gap {
		st.Gaps++
	}
	if !at.IsZero() {
		st.Lag = max(0, now.Sub(at))
	}
	st.LastEvent = now
	m.feeds.mu.Unlock()
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
