package config

import (
	"listingproxy/upstream"
	"listingproxy/upstream/binlog"
	"listingproxy/upstream/crm"
	"listingproxy/upstream/sqlstore"
	"listingproxy/upstream/webhook"
)

// CRMOptions are crm.Options' fields the configuration of the crm backend
// name decides, with each of its tenants' upstream credentials. cmd adds
// the clock, the logger and the transport's tracing.
func (c *Config) CRMOptions(name string) (crm.Options, error) {
	b := c.Backends[name].CRM
	creds := map[string]crm.Credential{}
	for _, tn := range c.TenantsOf(name) {
		t := c.Tenants[tn]
		creds[t.UpstreamTenant] = crm.Credential{Username: t.UpstreamUsername, Password: t.UpstreamPassword}
	}
	mode, err := crm.ParseHydrateMode(b.Hydrate)
	if err != nil {
		return crm.Options{}, err
	}
	return crm.Options{
		BaseURL: b.URL, Credentials: creds, Timeout: b.Timeout.D(), MaxConcurrency: b.MaxConcurrency,
		MaxBodyBytes: int64(b.MaxBodyBytes), MaxDecodingBytes: int64(b.MaxDecodingBytes), MaxElements: b.MaxElements, Hydrate: mode, HydrateConcurrency: b.HydrateConcurrency,
		DocTTL: b.DocTTL.D(), PassThrough: !b.Rerender,
	}, nil
}

// SQLConfig is sqlstore.Config's fields the configuration of the SQL
// backend name (sqlite, postgres or mysql) decides. cmd adds the clock,
// the logger, the tracer and the demo's setup.
func (c *Config) SQLConfig(name string) sqlstore.Config {
	kind, b := c.Backends[name].Kind, c.Backends[name].SQL
	return sqlstore.Config{
		Dialect: kind, DSN: b.DSN,
		MaxOpenConns: b.MaxOpenConns, MaxIdleConns: b.MaxIdleConns, PreparedStatements: b.PreparedStatements,
		ConnMaxLifetime: b.ConnMaxLifetime.D(), QueryTimeout: b.QueryTimeout.D(),
	}
}

// BinlogOptions are the binlog feed's options of the SQL backend name,
// whose binlog section is set.
func (c *Config) BinlogOptions(name string) binlog.Options {
	bl := c.Backends[name].SQL.Binlog
	o := binlog.Options{ServerID: bl.ServerID, Heartbeat: bl.Heartbeat.D(), Where: "backends." + name + ".binlog"}
	if len(bl.Tables) > 0 {
		o.Tables = map[string]binlog.Table{}
		for table, t := range bl.Tables {
			o.Tables[table] = binlog.Table(t)
		}
	}
	return o
}

// PollScopes are the short lists the CRM poller of backend name reads:
// each of its upstream tenants in each country served.
func (c *Config) PollScopes(name string) []upstream.Scope {
	var scopes []upstream.Scope
	for _, u := range c.UpstreamTenants(name) {
		for _, country := range c.Countries {
			scopes = append(scopes, upstream.Scope{Tenant: u, Country: country})
		}
	}
	return scopes
}

// WebhookTenants are the tenants of backend name that have a
// webhook_secret, as webhook.Options takes them; empty when none has.
func (c *Config) WebhookTenants(name string) map[string]webhook.Tenant {
	ts := map[string]webhook.Tenant{}
	for _, tn := range c.TenantsOf(name) {
		if t := c.Tenants[tn]; t.WebhookSecret != "" {
			ts[tn] = webhook.Tenant{Upstream: t.UpstreamTenant, Secret: []byte(t.WebhookSecret)}
		}
	}
	return ts
}

// TenantsByUpstream are the tenants served from backend name by their
// upstream tenant (freshness.Feed.Tenants): whom a change of the backend
// concerns.
func (c *Config) TenantsByUpstream(name string) map[string][]string {
	byUpstream := map[string][]string{}
	for _, tn := range c.TenantsOf(name) {
		u := c.Tenants[tn].UpstreamTenant
		byUpstream[u] = append(byUpstream[u], tn)
	}
	return byUpstream
}
