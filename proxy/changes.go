package proxy

import (
	"fmt"

	"listingproxy/cache"
	"listingproxy/upstream"
)

// ChangePurge is one purge a backend change makes in one of our tenants,
// with what it names for the event log: Kind ("tenant", "resource",
// "entity") and Target.
type ChangePurge struct {
	cache.Purge
	Kind, Target string
}

// ChangePurges is the one policy that turns a change a backend's feed
// reports (upstream.Change, from any feed: PostgreSQL NOTIFY, a binlog, a
// CRM's webhooks or the poller) into purges of tenant, one of our tenants
// served from the changed backend tenant. Every purge is soft: the next
// request refreshes, and while the backend fails (a feed often reconnects
// while its database restarts, before the pool's connections work again)
// the old body is still served under stale_if_error.
//
//   - A change naming entities: a purge by entity tag (PropertyTag,
//     AgentTag), every body that holds one of them (its single resource,
//     the lists that include it, the documents that embed it). An insert
//     of properties or agents also purges the tenant's lists of that
//     resource, so that new listings appear at once. An update that moves
//     an entity into a list it was not in (a new status, a later
//     last_updated on an earlier page) is not purged there: that list
//     shows it when its ttl ends (docs/caching.md, change feeds).
//   - A gap (the feed may have missed changes) or a change naming none (a
//     TRUNCATE, a bulk statement): every body of the tenant. An agent's
//     document embeds its properties and a property's its agents' names,
//     so both resources may be stale.
//
// A change of AllTenants is purged so in every tenant of the backend
// (entities whose tenant the feed could not tell are purged by entity in
// each: only their owner holds bodies tagged with them).
func ChangePurges(tenant string, c upstream.Change) []ChangePurge {
	if c.Gap || !c.Entities() {
		return []ChangePurge{{cache.Purge{Tenant: tenant, Mode: cache.Soft}, "tenant", ""}}
	}
	tags := make([]cache.Tag, 0, len(c.Properties)+len(c.Agents))
	for _, id := range c.Properties {
		tags = append(tags, PropertyTag(id))
	}
	for _, id := range c.Agents {
		tags = append(tags, AgentTag(id))
	}
	out := []ChangePurge{{cache.Purge{Tenant: tenant, Tags: tags, Mode: cache.Soft}, "entity",
		fmt.Sprintf("%d properties, %d agents", len(c.Properties), len(c.Agents))}}
	if c.Op == upstream.OpInsert && listResource(c.Resource) && (c.Table == "" || c.Table == c.Resource) {
		out = append(out, ChangePurge{cache.Purge{Tenant: tenant, Resource: c.Resource, Mode: cache.Soft}, "resource", c.Resource})
	}
	return out
}

// listResource reports whether r is the cache resource of a list.
func listResource(r string) bool { return r == resProperties || r == resAgents }
