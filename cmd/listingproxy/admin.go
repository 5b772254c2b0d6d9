package main

import (
	"maps"
	"net/http"
	"slices"

	"listingproxy/admin"
	"listingproxy/config"
	"listingproxy/internal/warmup"
	"listingproxy/statuspage"
	"listingproxy/telemetry"
	"listingproxy/upstream"
)

// adminOptions turns the configuration and the wired parts into the admin
// API's options: the operator's credentials, what a purge accepts, each
// backend's readiness and ping, the breakers, the status page.
func (a *app) adminOptions(cfg *config.Config, backends map[string]upstream.Backend, metrics http.Handler, purged func(telemetry.Purge)) admin.Options {
	o := admin.Options{
		Username: cfg.Admin.Username, PasswordBcrypt: cfg.Admin.PasswordBcrypt,
		Metrics: metrics, Draining: a.draining.Load,
		Tenants: slices.Sorted(maps.Keys(cfg.Tenants)), Resources: config.Resources, Purged: purged,
		Breakers: a.breakers, StatusPage: a.statusPage(),
	}
	if a.cache != nil { // a nil *cache.Store in the interface would not be nil
		o.Purger = a.cache
	}
	if a.warm != nil {
		o.Purger = warmup.Purger{Store: a.cache, W: a.warm}
		o.Warming = a.warm.Warming
	}
	if a.srv != nil {
		o.Targets = a.srv
		if a.cache != nil {
			o.Inspector = a.srv
		}
	}
	if a.shared != nil {
		o.SharedCache = a.shared.Stats
	}
	if a.disk != nil {
		o.DiskCache = a.disk.Stats
	}
	for _, name := range slices.Sorted(maps.Keys(backends)) {
		o.Backends = append(o.Backends, admin.BackendOf(name, cfg.Backends[name].Kind, backends[name]))
	}
	return o
}

// statusPage is the operator's page (statuspage), which admin serves at
// GET /status and GET /status.json behind the admin credentials.
func (a *app) statusPage() http.Handler {
	o := statuspage.Options{Traffic: a.metrics, Failures: a.errors, Events: a.metrics,
		Breakers: a.breakers, Feeds: a.metrics, Build: telemetry.ReadBuild()}
	if a.cache != nil { // a nil *cache.Store in the interface would not be nil
		o.Cache = a.cache
	}
	if a.shared != nil {
		o.Fleet, o.Shared = a.shared, a.shared.Stats // every replica on one page
	}
	if a.disk != nil {
		o.Disk = a.disk.Stats
	}
	p := statuspage.New(o)
	if o.Fleet != nil {
		// Closers run in reverse: this stops before the shared tier closes.
		a.closers = append(a.closers, p.Start())
	}
	return p
}
