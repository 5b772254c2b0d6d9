package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"

	"listingproxy/cache"
	"listingproxy/config"
	"listingproxy/proxy"
	"listingproxy/telemetry"
	"listingproxy/upstream"
	"listingproxy/upstream/sqlstore"
)

// listener is a backend that reports data changes (sqlstore on PostgreSQL).
type listener interface {
	Listen(ctx context.Context, fn func(sqlstore.Change)) error
}

// watchChanges listens for change notifications on every backend with
// notify: true and soft-purges, at once, the cached bodies they concern in
// each tenant served from the changed backend tenant (changePurges says
// which). It returns the function that stops the listeners.
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
			err := l.Listen(ctx, func(c sqlstore.Change) {
				tenants := byUpstream[c.Tenant]
				if c.Tenant == sqlstore.AllTenants {
					tenants = all
				}
				for _, tn := range tenants {
					for _, p := range changePurges(tn, c) {
						// Soft: the next request refreshes, but while the
						// backend fails (the listener reconnects as a
						// database restarts, often before the pool's
						// connections work again) the old body is still
						// served under stale_if_error.
						_ = store.PurgeContext(ctx, p.Purge)
						purged(p.event)
					}
				}
				if len(tenants) > 0 {
					log.Debug("purged on change notification", "backend", name, "upstream_tenant", c.Tenant, "resource", c.Resource,
						"op", c.Op, "properties", len(c.Properties), "agents", len(c.Agents), "tenants", tenants)
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

// changePurge is one purge a change notification makes, with its event.
type changePurge struct {
	cache.Purge
	event telemetry.Purge
}

// changePurges are the soft purges a change notification makes in tenant:
//
//   - naming entities (the trigger names up to 300 per statement): a purge
//     by entity, every body that holds one of them (its single resource,
//     the lists that include it, the documents that embed it); a statement
//     that inserts properties or agents also purges the tenant's lists of
//     that resource, so that new listings appear at once. An update that
//     moves an entity into a list it was not in (a new status, a later
//     last_updated on an earlier page) is not purged there: that list shows
//     it when its ttl ends (docs/caching.md, change notifications).
//   - naming none (a (re)connection, a TRUNCATE, a bulk statement, or a
//     trigger installed by an earlier release): every body of the tenant.
//     An agent's document embeds its properties and a property's its
//     agents' names, so both resources may be stale.
func changePurges(tenant string, c sqlstore.Change) []changePurge {
	ev := telemetry.Purge{Source: "notify", Mode: cache.Soft.String(), Tenant: tenant}
	if c.Tenant == sqlstore.AllTenants || !c.Entities() {
		ev.Kind = "tenant"
		return []changePurge{{cache.Purge{Tenant: tenant, Mode: cache.Soft}, ev}}
	}
	tags := make([]cache.Tag, 0, len(c.Properties)+len(c.Agents))
	for _, id := range c.Properties {
		tags = append(tags, proxy.PropertyTag(id))
	}
	for _, id := range c.Agents {
		tags = append(tags, proxy.AgentTag(id))
	}
	ev.Kind, ev.Target = "entity", fmt.Sprintf("%d properties, %d agents", len(c.Properties), len(c.Agents))
	out := []changePurge{{cache.Purge{Tenant: tenant, Tags: tags, Mode: cache.Soft}, ev}}
	if c.Op == "INSERT" && (c.Table == "properties" || c.Table == "agents") {
		lists := ev
		lists.Kind, lists.Target = "resource", c.Table
		out = append(out, changePurge{cache.Purge{Tenant: tenant, Resource: c.Table, Mode: cache.Soft}, lists})
	}
	return out
}
