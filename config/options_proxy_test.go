package config_test

import (
	"testing"
	"time"

	"listingproxy/cache/redistier"
	"listingproxy/proxy"
	"listingproxy/upstream"
)

// TestProxyConversions: a user's compatibility switches over its
// tenant's and its permissions; a CRM backend's tenants without caps
// (-1) sharing one call, a SQL backend's with none of it; the failure
// buckets a minute's rate as a second's; no hot keys without a warm-up,
// no policy without a cache.
func TestProxyConversions(t *testing.T) {
	t.Parallel()
	cfg := parse(t, `backends:
  sql: {kind: sqlite, dsn: x}
  legacy: {kind: crm, url: "http://crm.example", max_results: 50}
tenants:
  a: {backend: sql, compat: {json_numeric_ids: true, json_single_object_items: [photo]}, rate_limit: {requests_per_second: 5, burst: 10}}
  c: {backend: legacy, upstream_username: u, upstream_password: p, extra_fields: [video]}
users:
  - {username: own, password_bcrypt: "`+validHash+`", tenant: a, permissions: [full, prices], compat: {json_numeric_ids: false}}
  - {username: plain, password_bcrypt: "`+validHash+`", tenant: a}
auth: {failures_per_address: {per_minute: 30, burst: 4}}
cache: {disabled: true}
`)
	users := cfg.ProxyUsers()
	if u := users[0]; u.Permissions != proxy.PermFull|proxy.PermPrices || u.Compat == nil || u.Compat.NumericIDs || !u.Compat.SingleObjectItems["photo"] {
		t.Errorf("own: %+v, compat %+v", u, u.Compat)
	}
	if u := users[1]; u.Permissions != 0 || u.Compat != nil {
		t.Errorf("plain: %+v (the tenant's switches are the tenant's, not a copy)", u)
	}
	ts := cfg.ProxyTenants(map[string]upstream.Backend{})
	if a := ts[0]; a.Name != "a" || !a.JSONNumericIDs || a.MaxResults != 0 || a.ShareFetch || a.RateLimit != (proxy.Limit{PerSecond: 5, Burst: 10}) {
		t.Errorf("tenant a: %+v", a)
	}
	if c := ts[1]; c.Name != "c" || c.BackendName != "legacy" || c.MaxResults != 50 || c.MaxOffset != -1 || !c.ShareFetch || !c.ExtraFields["video"] {
		t.Errorf("tenant c: %+v", c)
	}
	o, err := cfg.ProxyOptions()
	if err != nil {
		t.Fatal(err)
	}
	if o.HotKeys != -1 || o.Policy != nil || o.Auth.AddressFailures != (proxy.Limit{PerSecond: 0.5, Burst: 4}) {
		t.Errorf("options: hot keys %d, policy set %t, address failures %+v", o.HotKeys, o.Policy != nil, o.Auth.AddressFailures)
	}
}

// TestServeConversions: the burst of new connections is two seconds'
// worth (at least 1); the fill lease is half the fill timeout unless
// set or longer than the tier's default.
func TestServeConversions(t *testing.T) {
	t.Parallel()
	cfg := parse(t, minimal+`server: {new_conns_per_second_per_address: 0.2, trusted_proxies: [10.0.0.0/8]}
cache: {fill_timeout: 4s, shared: {addrs: ["127.0.0.1:6379"], key_prefix: lp}}
`)
	if c := cfg.Server.ConnLimits(); c.NewBurst != 1 || c.Exempt == nil {
		t.Errorf("ConnLimits = %+v", c)
	}
	if o := cfg.Cache.SharedTierOptions(); o.Lease != 2*time.Second || o.KeyPrefix != "lp" {
		t.Errorf("SharedTierOptions = %+v, want a lease of 2s", o)
	}
	cfg.Cache.FillTimeout = 0
	if o := cfg.Cache.SharedTierOptions(); o.Lease != redistier.DefaultLease {
		t.Errorf("lease with the default fill timeout = %v, want %v", o.Lease, redistier.DefaultLease)
	}
}
