package config_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"listingproxy/config"
)

// TestReloadSplit: a reload applies users, breaker, log level and cache
// ttls; every other change is named as needing a restart and is kept out
// of the configuration in force.
func TestReloadSplit(t *testing.T) {
	cur, err := config.Load("../config.yaml", noEnv)
	if err != nil {
		t.Fatal(err)
	}
	next := *cur
	next.Listen = "127.0.0.1:9999"
	next.Cache.MaxBytes = cur.Cache.MaxBytes * 2
	next.Users = slices.Clone(cur.Users)[:1]
	next.Log.Level = "debug"
	next.Cache.TTL = cur.Cache.TTL + 1

	if diff := cmp.Diff([]string{"listen", "cache.max_bytes"}, config.NeedsRestart(cur, &next)); diff != "" {
		t.Errorf("NeedsRestart mismatch (-want +got):\n%s", diff)
	}
	got := config.WithFixed(&next, cur)
	if got.Listen != cur.Listen || got.Cache.MaxBytes != cur.Cache.MaxBytes {
		t.Errorf("in force: listen %q, max_bytes %d; want the running %q, %d", got.Listen, got.Cache.MaxBytes, cur.Listen, cur.Cache.MaxBytes)
	}
	if len(got.Users) != 1 || got.Log.Level != "debug" || got.Cache.TTL != next.Cache.TTL {
		t.Errorf("in force: %d users, level %q, ttl %v; want the reloaded 1, debug, %v", len(got.Users), got.Log.Level, got.Cache.TTL, next.Cache.TTL)
	}
	if len(config.NeedsRestart(got, got)) != 0 {
		t.Error("a configuration needs a restart against itself")
	}
}

// TestDiskTierChangeNeedsRestart: a reload does not open, close or move
// the disk tier under a running cache; it says a restart is needed.
func TestDiskTierChangeNeedsRestart(t *testing.T) {
	cur, err := config.Load("../config.yaml", noEnv)
	if err != nil {
		t.Fatal(err)
	}
	next := *cur
	next.Cache.Disk = &config.DiskCache{Path: "/var/lib/listingproxy/cache.db"}
	if got := config.NeedsRestart(cur, &next); !slices.Contains(got, "cache.disk") {
		t.Errorf("NeedsRestart = %v, want cache.disk listed", got)
	}
	if got := config.WithFixed(&next, cur); got.Cache.Disk != nil {
		t.Error("WithFixed took the new cache.disk; want the one in force")
	}
}
