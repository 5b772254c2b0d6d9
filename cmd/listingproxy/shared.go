package main

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"listingproxy/cache/redistier"
	"listingproxy/config"
	"listingproxy/telemetry"
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
	redistier.LogTo(log) // go-redis's dial failures, as debug lines
	metrics := telemetry.NewSharedCacheMetrics()
	// The lease must end before a waiter's own fill deadline (config
	// checks one that is set): by default at most half of it.
	lease := sh.Lease.D()
	if lease == 0 {
		lease = min(redistier.DefaultLease, fill/2)
	}
	t = redistier.New(rdb, redistier.Options{
		KeyPrefix: sh.KeyPrefix, MaxEntryBytes: int64(sh.MaxEntryBytes), Timeout: sh.Timeout.D(), Lease: lease,
		Logger: log, Observe: metrics.Observe,
	})
	close = func() {
		t.Close()
		_ = rdb.Close()
	}
	if err := metrics.Register(reg, t.Stats); err != nil {
		close()
		return nil, nil, fmt.Errorf("metrics: %w", err)
	}
	return t, close, nil
}
