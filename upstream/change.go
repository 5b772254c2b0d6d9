package upstream

import (
	"context"
	"time"
)

// AllTenants is the Change.Tenant of a change a feed cannot attribute to
// one tenant (a TRUNCATE, a gap in a stream that carries every tenant).
const AllTenants = "*"

// Resources a Change names.
const (
	ResourceProperties = "properties"
	ResourceAgents     = "agents"
)

// Operations a Change names.
const (
	OpInsert = "INSERT"
	OpUpdate = "UPDATE"
	OpDelete = "DELETE"
)

// Change is what a ChangeFeed reports: data that changed at the backend in
// one backend tenant (the tenant's identity at the backend, as in Scope).
//
// A Change names the entities whose documents changed (Properties,
// Agents), or, when Gap is set or it names none, says that anything of
// Tenant (of Resource, when set) may have changed.
type Change struct {
	// Tenant is the backend tenant, or AllTenants.
	Tenant string
	// Country is the country segment ("au") when the feed knows it; "":
	// any country.
	Country string
	// Resource is ResourceProperties (a property, its media, open homes or
	// agent links) or ResourceAgents; "" when not known.
	Resource string
	// Table is the changed table when the feed reads tables (properties,
	// agents, property_agents, ...); "" otherwise. Informational.
	Table string
	// Op is OpInsert, OpUpdate or OpDelete; "" when not known.
	Op string
	// Properties and Agents are the entities whose documents changed.
	Properties, Agents []int64
	// Gap says the feed may have missed changes of Tenant: it (re)connected,
	// lost its position, or its source failed over. Anything of Tenant
	// may be stale, and the source may still be recovering: a consumer
	// marks its copies stale rather than dropping them.
	Gap bool
	// At is when the change was made at the source (a commit's
	// timestamp), when the feed knows it; zero otherwise. It measures a
	// feed's lag.
	At time.Time
}

// Entities reports whether c names the changed entities.
func (c Change) Entities() bool { return len(c.Properties)+len(c.Agents) > 0 }

// ChangeSink receives what a ChangeFeed reports. Its methods are called
// from the feed's goroutines, one at a time per feed, and must be quick.
type ChangeSink interface {
	// Changed reports one change.
	Changed(Change)
	// Live reports the feed's state: reading its source and caught up
	// (nil), or not (the reason). A feed that comes back after an error
	// reports a Gap change for what it may have missed, then Live(nil).
	// A heartbeat that finds the source alive is reported as Live(nil).
	Live(err error)
}

// ChangeFeed is a source of change notifications a backend kind may offer:
// PostgreSQL's NOTIFY, a MariaDB/MySQL binlog, a CRM's webhooks, a poller
// of a CRM's lists. The policy that turns changes into cache purges is the
// consumer's (proxy.ChangePurges); a feed only reports.
type ChangeFeed interface {
	// Name is the feed's kind for logs and metric labels ("notify",
	// "binlog", "webhook", "poll").
	Name() string
	// Watch reports changes to sink until ctx ends, reconnecting by itself
	// after failures (reported as Live errors and Gap changes). It returns
	// nil when ctx ends, and an error at once only when it cannot run at
	// all (a misconfiguration it finds on its first try).
	Watch(ctx context.Context, sink ChangeSink) error
}
