package main

import (
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"listingproxy/cache/redistier"
	"listingproxy/config"
	"listingproxy/telemetry"
)

// sharedTier builds the Redis second tier of c.Shared and registers its
// metrics on reg. The tier is handed to cache.New as both its SecondTier
// and its Generations; close must run after the cache's Close.
func sharedTier(c config.Cache, log *slog.Logger, reg prometheus.Registerer) (t *redistier.Tier, close func(), err error) {
	rdb, err := redistier.Dial(c.Shared.ClientOptions())
	if err != nil {
		return nil, nil, err
	}
	redistier.LogTo(log) // go-redis's dial failures, as debug lines
	metrics := telemetry.NewSharedCacheMetrics()
	o := c.SharedTierOptions()
	o.Logger, o.Observe = log, metrics.Observe
	t = redistier.New(rdb, o)
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
