package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"listingproxy/cache/redistier"
	"listingproxy/config"
)

// sharedTier builds the Redis second tier of cache.shared and registers its
// metrics on reg. The tier is handed to cache.New as both its SecondTier
// and its Generations; close must run after the cache's Close.
func sharedTier(sh *config.SharedCache, fill time.Duration, log *slog.Logger, reg prometheus.Registerer) (t *redistier.Tier, close func(), err error) {
	rdb, err := redistier.Dial(redistier.ClientOptions{
		Addrs: sh.Addrs, MasterName: sh.MasterName, Username: sh.Username, Password: sh.Password, DB: sh.DB,
		TLSEnabled: sh.TLS.Enabled, CAFile: sh.TLS.CAFile, CertFile: sh.TLS.CertFile, KeyFile: sh.TLS.KeyFile, ServerName: sh.TLS.ServerName,
		Timeout: sh.Timeout.D(),
	})
	if err != nil {
		return nil, nil, err
	}
	// go-redis reports dial failures through a logger of its own, global
	// to the library (no per-client knob): send them to ours, as debug
	// lines (the tier's breaker and metrics already say Redis is away).
	redis.SetLogger(redisLogger{log})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "listingproxy_shared_cache_operation_seconds",
		Help:    "Duration of Redis operations of the shared cache tier, by operation and result (ok, error).",
		Buckets: []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .25},
	}, []string{"op", "result"})
	// The lease must end before a waiter's own fill deadline (config
	// checks one that is set): by default at most half of it.
	lease := sh.Lease.D()
	if lease == 0 {
		lease = min(redistier.DefaultLease, fill/2)
	}
	t = redistier.New(rdb, redistier.Options{
		KeyPrefix: sh.KeyPrefix, MaxEntryBytes: int64(sh.MaxEntryBytes), Timeout: sh.Timeout.D(), Lease: lease,
		Logger: log,
		Observe: func(op string, d time.Duration, err error) {
			result := "ok"
			if err != nil {
				result = "error"
			}
			latency.WithLabelValues(op, result).Observe(d.Seconds())
		},
	})
	close = func() {
		t.Close()
		_ = rdb.Close()
	}
	if err := registerShared(reg, t.Stats, latency); err != nil {
		close()
		return nil, nil, fmt.Errorf("metrics: %w", err)
	}
	return t, close, nil
}

// registerShared registers the shared tier's families, read from stats at
// each scrape.
func registerShared(reg prometheus.Registerer, stats func() redistier.Stats, latency *prometheus.HistogramVec) error {
	counter := func(name, help string, f func(redistier.Stats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(f(stats())) })
	}
	cs := []prometheus.Collector{
		latency,
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
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// redisLogger is go-redis's logging interface on a slog.Logger.
type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.DebugContext(ctx, "redis: "+fmt.Sprintf(format, v...))
}
