package main

import (
	"reflect"

	"listingproxy/config"
	"listingproxy/proxy"
)

// reload applies the reloadable parts of next to the running service, all at
// once: users, cache TTLs and freshness windows, breaker settings (new
// breakers, only when the settings changed, so a reload does not close an
// open breaker) and, in serve, the log level. next has been validated by
// config.Load. On error nothing changes. It returns the keys whose changes
// need a restart and were not applied. Reloads must not run concurrently
// (serve runs them from its one signal loop).
func (a *app) reload(next *config.Config) (restart []string, err error) {
	o := proxy.ReloadOptions{}
	if a.cache != nil && !next.Cache.Disabled {
		o.Policy = policies(next.Cache)
	}
	if err := a.srv.Reload(proxyUsers(next.Users), o); err != nil {
		return nil, err
	}
	a.breakers.Reload(breakerSettings(next.Breaker)) // a no-op when unchanged
	restart = needsRestart(a.cfg, next)
	a.cfg = withFixed(next, a.cfg)
	return restart, nil
}

// needsRestart names the top-level keys (and cache.max_bytes,
// cache.disabled, cache.shared) whose change a reload cannot apply.
func needsRestart(cur, next *config.Config) []string {
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
	check("server", cur.Server, next.Server)
	check("auth", cur.Auth, next.Auth)
	check("telemetry", cur.Telemetry, next.Telemetry)
	check("log.format", cur.Log.Format, next.Log.Format)
	return keys
}

// withFixed is next with the parts that need a restart taken from cur: the
// configuration actually in force, against which the next reload compares.
func withFixed(next, cur *config.Config) *config.Config {
	c := *cur
	c.Users, c.Breaker, c.Log.Level = next.Users, next.Breaker, next.Log.Level
	c.Cache.TTL, c.Cache.TTLs, c.Cache.StaleWhileRevalidate = next.Cache.TTL, next.Cache.TTLs, next.Cache.StaleWhileRevalidate
	c.Cache.StaleIfError, c.Cache.NegativeTTL, c.Cache.FillTimeout = next.Cache.StaleIfError, next.Cache.NegativeTTL, next.Cache.FillTimeout
	return &c
}
