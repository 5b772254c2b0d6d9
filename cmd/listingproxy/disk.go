package main

import (
	"log/slog"
	"time"

	"listingproxy/cache/disktier"
	"listingproxy/config"
)

// diskTier opens the disk tier of cache.disk (config checked that there
// is no cache.shared beside it).
func diskTier(d *config.DiskCache, log *slog.Logger, now func() time.Time) (*disktier.Tier, error) {
	return disktier.Open(disktier.Options{Path: d.Path, MaxBytes: int64(d.MaxBytes), Now: now, Logger: log})
}
