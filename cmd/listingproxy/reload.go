package main

import (
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
		o.Policy = next.Cache.Policies(proxy.DefaultPolicy).For
	}
	if err := a.srv.Reload(next.ProxyUsers(), o); err != nil {
		return nil, err
	}
	a.breakers.Reload(next.Breaker.Settings()) // a no-op when unchanged
	restart = config.NeedsRestart(a.cfg, next)
	a.cfg = config.WithFixed(next, a.cfg)
	return restart, nil
}
