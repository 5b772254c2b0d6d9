package main

import (
	"context"
	"log/slog"
	"maps"
	"slices"

	"listingproxy/cache"
	"listingproxy/config"
	"listingproxy/telemetry"
	"listingproxy/upstream"
	"listingproxy/upstream/sqlstore"
)

// listener is a backend that reports data changes (sqlstore on PostgreSQL).
type listener interface {
	Listen(ctx context.Context, fn func(tenant, resource string)) error
}

// watchChanges listens for change notifications on every backend with
// notify: true and soft-purges, at once, the cached bodies of each tenant
// served from the changed backend tenant (all its tenants when the listener
// (re)connects). It purges the tenant's every resource,
// whatever the notification's resource: an agent's document embeds its
// properties and a property's embeds its agents' names, so a change to
// either can stale both. It returns the function that stops the listeners.
func watchChanges(cfg *config.Config, backends map[string]upstream.Backend, store *cache.Store, log *slog.Logger, purged func(telemetry.Purge)) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	n := 0
	for _, name := range slices.Sorted(maps.Keys(backends)) {
		if b := cfg.Backends[name]; b.SQL == nil || !b.SQL.Notify {
			continue
		}
		l, ok := backends[name].(listener)
		if !ok || store == nil {
			log.Warn("change notifications are off: nothing to listen to or no cache to purge", "backend", name)
			continue
		}
		byUpstream := map[string][]string{} // backend tenant -> our tenants
		var all []string
		for _, tn := range slices.Sorted(maps.Keys(cfg.Tenants)) {
			if t := cfg.Tenants[tn]; t.Backend == name {
				byUpstream[t.UpstreamTenant] = append(byUpstream[t.UpstreamTenant], tn)
				all = append(all, tn)
			}
		}
		n++
		go func() {
			defer func() { done <- struct{}{} }()
			err := l.Listen(ctx, func(tenant, resource string) {
				purge := byUpstream[tenant]
				if tenant == sqlstore.AllTenants {
					purge = all
				}
				// Soft: the next request refreshes, but while the backend
				// fails (the listener reconnects as a database restarts,
				// often before the pool's connections work again) the
				// old body is still served under stale_if_error.
				for _, tn := range purge {
					store.Purge(tn, "", cache.Soft)
					purged(telemetry.Purge{Source: "notify", Kind: "tenant", Mode: cache.Soft.String(), Tenant: tn})
				}
				if len(purge) > 0 {
					log.Debug("purged on change notification", "backend", name, "upstream_tenant", tenant, "resource", resource, "tenants", purge)
				}
			})
			if err != nil {
				log.Warn("change listener stopped", "backend", name, "error", err)
			}
		}()
	}
	return func() {
		cancel()
		for range n {
			<-done
		}
	}
}
