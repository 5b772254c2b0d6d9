package config

import (
	"cmp"
	"maps"
	"slices"

	"listingproxy/cache"
	"listingproxy/clientip"
	"listingproxy/internal/warmup"
	"listingproxy/proxy"
	"listingproxy/upstream"
)

// ProxyOptions are proxy.Options' fields the configuration decides: the
// countries' time zones, the list bounds, authentication, how many hot
// requests to record (cache.warm.keys; -1, none, without a warm-up) and,
// with a cache, each resource's policy. cmd adds the clock, the logger,
// the tracer, the cache, the webhooks and Observe.
func (c *Config) ProxyOptions() (proxy.Options, error) {
	zones, err := c.Locations()
	if err != nil {
		return proxy.Options{}, err
	}
	o := proxy.Options{Countries: zones, MaxResults: c.MaxResults, MaxOffset: c.MaxOffset, Auth: c.AuthOptions(), HotKeys: -1}
	if w := c.Cache.Warm; w != nil {
		o.HotKeys = w.Keys
	}
	if !c.Cache.Disabled {
		o.Policy = c.Cache.Policies(proxy.DefaultPolicy).For
	}
	return o, nil
}

// CacheOptions are cache.Options' fields the configuration decides: the
// bound in bytes and how long a purge by entity or URL is remembered (the
// longest life of an entry). cmd adds the clock, the logger, the tracer,
// the refresh budget and a second tier.
func (c *Config) CacheOptions() cache.Options {
	return cache.Options{MaxBytes: int64(c.Cache.MaxBytes), RecordLifetime: c.Cache.Policies(proxy.DefaultPolicy).Longest()}
}

// AuthOptions bound the cost of checking API credentials (auth), the
// failure buckets a minute's rate turned into a second's; client
// addresses are read behind server.trusted_proxies.
func (c *Config) AuthOptions() proxy.AuthOptions {
	a := c.Auth
	perMinute := func(f FailureLimit) proxy.Limit {
		return proxy.Limit{PerSecond: f.PerMinute / 60, Burst: f.Burst}
	}
	return proxy.AuthOptions{
		Workers: a.Workers, Queue: a.Queue, ChecksPerSecond: a.ChecksPerSecond, VerifiedEntries: a.VerifiedEntries, RefusalDelay: a.RefusalDelay.D(),
		AddressFailures: perMinute(a.FailuresPerAddress), UsernameFailures: perMinute(a.FailuresPerUsername),
		ClientIP: clientip.Resolver{Trusted: c.Server.TrustedPrefixes()},
	}
}

// ProxyTenants are the tenants as proxy.New takes them, sorted by name,
// each calling the backend of its name in backends (as decorated: what the
// proxy calls). A CRM backend's tenants take its max_results and
// max_offset (none unless it sets them) and share one CRM call among
// every variant of an answer unless it rerenders.
func (c *Config) ProxyTenants(backends map[string]upstream.Backend) []proxy.Tenant {
	tenants := make([]proxy.Tenant, 0, len(c.Tenants))
	for _, name := range slices.Sorted(maps.Keys(c.Tenants)) {
		t := c.Tenants[name]
		pt := proxy.Tenant{Name: name, Backend: backends[t.Backend], BackendName: t.Backend, Upstream: t.UpstreamTenant,
			JSONSingleObject: t.Compat.JSONSingleObject, JSONNumericIDs: t.Compat.JSONNumericIDs, JSONVideoURL: t.Compat.JSONVideoURL, StrictParams: t.StrictParams}
		pt.JSONSingleObjectItems, pt.ExtraFields = itemSet(t.Compat.JSONSingleObjectItems), itemSet(t.ExtraFields)
		if cb := c.Backends[t.Backend].CRM; cb != nil {
			pt.MaxResults = cmp.Or(cb.MaxResults, -1) // none unless the backend sets one
			pt.MaxOffset = cmp.Or(cb.MaxOffset, -1)   // likewise
			pt.ShareFetch = !cb.Rerender              // one CRM call serves every variant
		}
		if rl := t.RateLimit; rl != nil {
			pt.RateLimit = proxy.Limit{PerSecond: rl.RequestsPerSecond, Burst: rl.Burst}
		}
		tenants = append(tenants, pt)
	}
	return tenants
}

// ProxyUsers are the users as proxy.New and proxy.Server.Reload take
// them: a user's own compatibility switches set over its tenant's.
func (c *Config) ProxyUsers() []proxy.User {
	users := make([]proxy.User, len(c.Users))
	for i, u := range c.Users {
		users[i] = proxy.User{Username: u.Username, PasswordHash: []byte(u.PasswordBcrypt), Tenant: u.Tenant, Permissions: permissions(u.Permissions)}
		if u.Compat != nil {
			cc := u.Compat.Over(c.Tenants[u.Tenant].Compat)
			users[i].Compat = &proxy.Compat{SingleObject: cc.JSONSingleObject, NumericIDs: cc.JSONNumericIDs, VideoURL: cc.JSONVideoURL,
				SingleObjectItems: itemSet(cc.JSONSingleObjectItems)}
		}
	}
	return users
}

// itemSet is items as a set; nil when empty.
func itemSet(items []string) map[string]bool {
	if len(items) == 0 {
		return nil
	}
	m := make(map[string]bool, len(items))
	for _, it := range items {
		m[it] = true
	}
	return m
}

func permissions(names []string) proxy.Permissions {
	var p proxy.Permissions
	for _, n := range names {
		switch n {
		case PermFull:
			p |= proxy.PermFull
		case PermPrices:
			p |= proxy.PermPrices
		}
	}
	return p
}

// Budgets are each backend's budget of background calls
// (cache.refresh_budget calls a second), by tenant: refreshes ahead of
// expiry and the warm-up share it.
func (c *Config) Budgets() warmup.Budgets {
	backendOf := map[string]string{}
	for tn, t := range c.Tenants {
		backendOf[tn] = t.Backend
	}
	return warmup.NewBudgets(cmp.Or(c.Cache.RefreshBudget, float64(proxy.DefaultRefreshBudget)), backendOf)
}
