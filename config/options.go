package config

import (
	"cmp"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"listingproxy/cache"
	"listingproxy/clientip"
	"listingproxy/upstream"
	"listingproxy/upstream/breaker"
)

// config turns a validated Config into every package's options: this
// file (the cache's policies, the breakers' settings, the trusted
// prefixes, the countries' zones, and the questions cmd asks of a
// configuration), options_proxy.go (proxy, the cache, the warm-up's
// budgets), options_backends.go (the adapters and their change feeds) and
// options_serve.go (the HTTP servers, the connection limits, tracing, the
// second tiers). cmd only composes the parts: it adds what is not
// configuration (clocks, loggers, tracers, the objects it built) and
// calls the constructors. The packages keep taking plain options and
// never import config; config sits above them (only programs import it),
// so a new key is decoded, validated and converted in this one package.

// Policies are each resource's freshness policy (cache.Policy), by
// config.Resources.
type Policies map[string]cache.Policy

// Policies turns the cache section into each resource's policy; a zero
// field takes d's (proxy.DefaultPolicy), cache.ttls overrides cache.ttl
// for its resource.
func (c Cache) Policies(d cache.Policy) Policies {
	m := Policies{}
	for _, r := range Resources {
		ttl := cmp.Or(c.TTL.D(), d.TTL)
		if t, ok := c.TTLs[r]; ok {
			ttl = t.D()
		}
		p := cache.Policy{
			TTL: ttl, StaleWhileRevalidate: cmp.Or(c.StaleWhileRevalidate.D(), d.StaleWhileRevalidate), StaleIfError: cmp.Or(c.StaleIfError.D(), d.StaleIfError),
			NegativeTTL: cmp.Or(c.NegativeTTL.D(), d.NegativeTTL), FillTimeout: cmp.Or(c.FillTimeout.D(), d.FillTimeout),
			RefreshAhead: d.RefreshAhead, RefreshHits: cmp.Or(c.RefreshHits, d.RefreshHits),
		}
		if c.RefreshAhead != nil {
			p.RefreshAhead = *c.RefreshAhead
		}
		m[r] = p
	}
	return m
}

// For is the policy of resource (cache.Options.Policy's form).
func (p Policies) For(resource string) cache.Policy { return p[resource] }

// Longest is the longest time any entry stays of use under p (ttl plus
// the longer stale window, or negative_ttl plus stale_if_error): how long
// the cache keeps the record of a purge by entity or URL.
func (p Policies) Longest() time.Duration {
	var d time.Duration
	for _, q := range p {
		d = max(d, q.TTL+max(q.StaleWhileRevalidate, q.StaleIfError), q.NegativeTTL+q.StaleIfError)
	}
	return d
}

// Settings are the breakers' settings; zero fields take upstream/breaker's
// defaults.
func (c Breaker) Settings() breaker.Settings {
	return breaker.Settings{
		ConsecutiveFailures: c.Failures, FailureRatio: c.FailureRatio, MinRequests: c.MinRequests,
		Window: c.Window.D(), OpenFor: c.OpenFor.D(), HalfOpenProbes: c.HalfOpenProbes, TenantShare: c.TenantShare,
		QueueTimeout: c.QueueTimeout.D(),
	}
}

// TrustedPrefixes are server.trusted_proxies, which validation checked.
func (s Server) TrustedPrefixes() []netip.Prefix {
	trusted, _ := clientip.ParsePrefixes(s.TrustedProxies)
	return trusted
}

// SlogLevel is log.level; validation admits only valid names.
func (l Log) SlogLevel() slog.Level {
	var level slog.Level
	_ = level.UnmarshalText([]byte(l.Level))
	return level
}

// Locations are the time zones of the countries served.
func (c *Config) Locations() (map[string]*time.Location, error) {
	zones := map[string]*time.Location{}
	for _, country := range c.Countries {
		zone := upstream.CountryZones()[country]
		loc, err := time.LoadLocation(zone)
		if err != nil {
			return nil, fmt.Errorf("country %s: time zone %s: %w", country, zone, err)
		}
		zones[country] = loc
	}
	return zones, nil
}

// TenantsOf are the tenants served from backend, sorted.
func (c *Config) TenantsOf(backend string) []string {
	var out []string
	for _, tn := range slices.Sorted(maps.Keys(c.Tenants)) {
		if c.Tenants[tn].Backend == backend {
			out = append(out, tn)
		}
	}
	return out
}

// UpstreamTenants are the backend's own names of the tenants served from
// it (upstream_tenant), each once, in the order of TenantsOf.
func (c *Config) UpstreamTenants(backend string) []string {
	var out []string
	for _, tn := range c.TenantsOf(backend) {
		if u := c.Tenants[tn].UpstreamTenant; !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	return out
}

// SQLBackend picks a SQL backend (listingproxy seed's -backend): the
// named one, or the only SQL backend of the configuration.
func (c *Config) SQLBackend(name string) (string, Backend, error) {
	isSQL := func(b Backend) bool { return b.SQL != nil }
	if name != "" {
		b, ok := c.Backends[name]
		switch {
		case !ok:
			return "", b, fmt.Errorf("no backend %q (have %s)", name, strings.Join(slices.Sorted(maps.Keys(c.Backends)), ", "))
		case !isSQL(b):
			return "", b, fmt.Errorf("backend %s is %s, not a SQL backend", name, b.Kind)
		}
		return name, b, nil
	}
	var sqlNames []string
	for _, n := range slices.Sorted(maps.Keys(c.Backends)) {
		if isSQL(c.Backends[n]) {
			sqlNames = append(sqlNames, n)
		}
	}
	if len(sqlNames) != 1 {
		return "", Backend{}, fmt.Errorf("-backend is required (SQL backends: %s)", cmp.Or(strings.Join(sqlNames, ", "), "off"))
	}
	return sqlNames[0], c.Backends[sqlNames[0]], nil
}
