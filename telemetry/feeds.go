package telemetry

import (
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
}

func newFeedMetrics() feedMetrics {
	l := []string{"backend", "feed"}
	return feedMetrics{
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

func (f feedMetrics) collectors() []prometheus.Collector {
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
}

// PollCall counts a list call the change poller of backend made.
func (m *Metrics) PollCall(backend string) { m.feeds.pollCalls.WithLabelValues(backend).Inc() }

// FeedHeld records whether this process runs the feed.
func (m *Metrics) FeedHeld(backend, feed string, held bool) {
	m.feeds.held.WithLabelValues(backend, feed).Set(b2f(held))
}

// FeedLive records a feed's state at now: up (err nil) or not.
func (m *Metrics) FeedLive(backend, feed string, err error, now time.Time) {
	m.feeds.up.WithLabelValues(backend, feed).Set(b2f(err == nil))
	if err == nil {
		m.feeds.lastEvent.WithLabelValues(backend, feed).Set(float64(now.UnixNano()) / 1e9)
	}
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
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
