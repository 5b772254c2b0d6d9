package config

import "reflect"

// NeedsRestart names the top-level keys (and cache.max_bytes,
// cache.disabled, cache.shared) whose change from cur to next a reload
// cannot apply: a reload (SIGHUP) applies users, breaker, log.level and
// the cache's ttls and freshness windows only.
func NeedsRestart(cur, next *Config) []string {
	var keys []string
	check := func(key string, a, b any) {
		if !reflect.DeepEqual(a, b) {
			keys = append(keys, key)
		}
	}
	check("listen", cur.Listen, next.Listen)
	check("admin_listen", cur.AdminListen, next.AdminListen)
	check("countries", cur.Countries, next.Countries)
	check("max_results", cur.MaxResults, next.MaxResults)
	check("max_offset", cur.MaxOffset, next.MaxOffset)
	check("backends", cur.Backends, next.Backends)
	check("tenants", cur.Tenants, next.Tenants)
	check("admin", cur.Admin, next.Admin)
	check("cache.max_bytes", cur.Cache.MaxBytes, next.Cache.MaxBytes)
	check("cache.disabled", cur.Cache.Disabled, next.Cache.Disabled)
	check("cache.shared", cur.Cache.Shared, next.Cache.Shared)
	check("cache.disk", cur.Cache.Disk, next.Cache.Disk)
	check("cache.warm", cur.Cache.Warm, next.Cache.Warm)
	check("server", cur.Server, next.Server)
	check("auth", cur.Auth, next.Auth)
	check("telemetry", cur.Telemetry, next.Telemetry)
	check("log.format", cur.Log.Format, next.Log.Format)
	return keys
}

// WithFixed is next with the parts that need a restart taken from cur: the
// configuration actually in force after a reload, against which the next
// reload compares.
func WithFixed(next, cur *Config) *Config {
	c := *cur
	c.Users, c.Breaker, c.Log.Level = next.Users, next.Breaker, next.Log.Level
	c.Cache.TTL, c.Cache.TTLs, c.Cache.StaleWhileRevalidate = next.Cache.TTL, next.Cache.TTLs, next.Cache.StaleWhileRevalidate
	c.Cache.StaleIfError, c.Cache.NegativeTTL, c.Cache.FillTimeout = next.Cache.StaleIfError, next.Cache.NegativeTTL, next.Cache.FillTimeout
	c.Cache.RefreshAhead, c.Cache.RefreshHits = next.Cache.RefreshAhead, next.Cache.RefreshHits
	return &c
}
