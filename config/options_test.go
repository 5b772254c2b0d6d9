package config_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"listingproxy/cache"
	"listingproxy/config"
)

func parse(t *testing.T, src string) *config.Config {
	t.Helper()
	cfg, err := config.Parse("c.yaml", []byte(src), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestPolicies: a zero field takes the defaults given, cache.ttls
// overrides cache.ttl for its resource only, refresh_ahead 0 turns it
// off; Longest is the longest life of an entry under them.
func TestPolicies(t *testing.T) {
	t.Parallel()
	d := cache.Policy{TTL: time.Minute, StaleWhileRevalidate: 10 * time.Minute, StaleIfError: time.Hour, NegativeTTL: 30 * time.Second,
		FillTimeout: 10 * time.Second, RefreshAhead: 0.1, RefreshHits: 2}
	if got := (config.Cache{}).Policies(d).For("agent"); got != d {
		t.Errorf("empty cache section: %+v, want the defaults %+v", got, d)
	}
	cfg := parse(t, minimal+"cache: {ttl: 2m, ttls: {agent: 1h}, stale_if_error: 5m, refresh_ahead: 0}\n")
	p := cfg.Cache.Policies(d)
	if a, l := p.For("agent"), p.For("properties"); a.TTL != time.Hour || l.TTL != 2*time.Minute || l.StaleIfError != 5*time.Minute ||
		l.StaleWhileRevalidate != d.StaleWhileRevalidate || l.RefreshAhead != 0 || l.RefreshHits != d.RefreshHits {
		t.Errorf("agent %+v, properties %+v", a, l)
	}
	if got, want := p.Longest(), time.Hour+10*time.Minute; got != want {
		t.Errorf("Longest = %v, want %v (agent's ttl and stale window)", got, want)
	}
	neg := parse(t, minimal+"cache: {ttl: 1s, stale_while_revalidate: 1s, negative_ttl: 1h, stale_if_error: 1m}\n").Cache.Policies(d)
	if got, want := neg.Longest(), time.Hour+time.Minute; got != want {
		t.Errorf("Longest with a long negative_ttl = %v, want %v", got, want)
	}
}

// TestBackendQuestions: TenantsOf and UpstreamTenants (each backend name
// once, sorted by our tenant), SQLBackend (the only SQL backend, a named
// one, or a located refusal), TrustedPrefixes and Locations.
func TestBackendQuestions(t *testing.T) {
	t.Parallel()
	cfg := parse(t, `backends:
  sql: {kind: sqlite, dsn: x}
  other: {kind: sqlite, dsn: y}
  legacy: {kind: crm, url: "http://crm.example", hydrate: never}
tenants:
  zeta: {backend: sql, upstream_tenant: shared}
  alpha: {backend: sql, upstream_tenant: shared}
  mid: {backend: sql}
  crm1: {backend: legacy, upstream_username: u, upstream_password: p}
countries: [au, nz]
server: {trusted_proxies: [10.0.0.0/8]}
`)
	if got := cfg.TenantsOf("sql"); !slices.Equal(got, []string{"alpha", "mid", "zeta"}) {
		t.Errorf("TenantsOf(sql) = %v", got)
	}
	if got := cfg.UpstreamTenants("sql"); !slices.Equal(got, []string{"shared", "mid"}) {
		t.Errorf("UpstreamTenants(sql) = %v, want [shared mid]", got)
	}
	if got := cfg.TenantsOf("nothing"); got != nil {
		t.Errorf("TenantsOf an unknown backend = %v", got)
	}
	if _, _, err := cfg.SQLBackend(""); err == nil || !strings.Contains(err.Error(), "-backend is required (SQL backends: other, sql)") {
		t.Errorf("two SQL backends, none named: %v", err)
	}
	if _, _, err := cfg.SQLBackend("legacy"); err == nil || !strings.Contains(err.Error(), "backend legacy is crm, not a SQL backend") {
		t.Errorf("a CRM named: %v", err)
	}
	if _, _, err := cfg.SQLBackend("nope"); err == nil || !strings.Contains(err.Error(), `no backend "nope" (have legacy, other, sql)`) {
		t.Errorf("an unknown backend: %v", err)
	}
	if name, b, err := cfg.SQLBackend("other"); err != nil || name != "other" || b.SQL == nil {
		t.Errorf("SQLBackend(other) = %s, %+v, %v", name, b, err)
	}
	one := parse(t, minimal)
	if name, _, err := one.SQLBackend(""); err != nil || name != "d" {
		t.Errorf("the only SQL backend: %s, %v", name, err)
	}
	if ps := cfg.Server.TrustedPrefixes(); len(ps) != 1 || ps[0].String() != "10.0.0.0/8" {
		t.Errorf("TrustedPrefixes = %v", ps)
	}
	locs, err := cfg.Locations()
	if err != nil || len(locs) != 2 || locs["nz"].String() != "Pacific/Auckland" {
		t.Errorf("Locations = %v, %v", locs, err)
	}
}
