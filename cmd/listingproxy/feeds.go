package main

import (
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"

	"listingproxy/cache"
	"listingproxy/config"
	"listingproxy/freshness"
	"listingproxy/telemetry"
	"listingproxy/upstream"
	"listingproxy/upstream/binlog"
	"listingproxy/upstream/poll"
	"listingproxy/upstream/sqlstore"
	"listingproxy/upstream/webhook"
)

// startFeeds opens the change feeds the configuration asks for (each
// backend kind's feeds function, and a webhook receiver for the tenants
// of any backend with webhook_secret) and runs them (freshness.Start)
// until the returned function is called. hooks serves the receivers
// (POST /hooks/changes/{tenant}); nil when no tenant has a secret.
// Without a cache there is nothing to purge, and no feed runs.
func startFeeds(cfg *config.Config, backends, decorated map[string]upstream.Backend, store *cache.Store, metrics *telemetry.Metrics, o freshness.Options) (stop func(), hooks http.Handler, err error) {
	var feeds []freshness.Feed
	receivers := map[string]*webhook.Receiver{} // by our tenant
	for _, name := range slices.Sorted(maps.Keys(backends)) {
		e := feedEnv{name: name, cfg: cfg, opened: backends[name], decorated: decorated[name], log: o.Logger.With("backend", name), metrics: metrics}
		var fs []upstream.ChangeFeed
		if k := backendKinds[cfg.Backends[name].Kind]; k.feeds != nil {
			if fs, err = k.feeds(e); err != nil {
				return nil, nil, err
			}
		}
		rc, err := webhookFeed(e)
		if err != nil {
			return nil, nil, err
		}
		if rc != nil {
			fs = append(fs, rc)
		}
		if len(fs) == 0 {
			continue
		}
		if store == nil {
			o.Logger.Warn("change feeds are off: the cache is disabled, so there is nothing to purge", "backend", name)
			continue
		}
		if rc != nil {
			for _, tn := range rc.Tenants() {
				receivers[tn] = rc
			}
		}
		byUpstream := map[string][]string{} // backend tenant -> our tenants
		for _, tn := range cfg.TenantsOf(name) {
			u := cfg.Tenants[tn].UpstreamTenant
			byUpstream[u] = append(byUpstream[u], tn)
		}
		for _, f := range fs {
			feeds = append(feeds, freshness.Feed{Backend: name, Feed: f, Tenants: byUpstream})
		}
	}
	if len(receivers) > 0 {
		hooks = webhook.Mux(receivers)
	}
	if len(feeds) == 0 {
		return func() {}, hooks, nil
	}
	o.Purger = store
	return freshness.Start(feeds, o), hooks, nil
}

// feedEnv is what a backend kind's feeds function may use: the backend
// as opened (the adapter, which offers the feeds) and as the proxy calls it
// (with its breakers, for a feed that reads through the API).
type feedEnv struct {
	name              string
	cfg               *config.Config
	opened, decorated upstream.Backend
	log               *slog.Logger
	metrics           *telemetry.Metrics
}

// sqlFeeds are a SQL backend's feeds: PostgreSQL's NOTIFY with notify,
// MySQL/MariaDB's binlog with binlog.
func sqlFeeds(e feedEnv) ([]upstream.ChangeFeed, error) {
	sb := e.cfg.Backends[e.name].SQL
	if !sb.Notify && sb.Binlog == nil {
		return nil, nil
	}
	st, ok := e.opened.(*sqlstore.Store)
	if !ok {
		return nil, fmt.Errorf("backend %s: %T is not a SQL store", e.name, e.opened)
	}
	var fs []upstream.ChangeFeed
	if sb.Notify {
		fs = append(fs, st.NotifyFeed())
	}
	if bl := sb.Binlog; bl != nil {
		o := binlog.Options{ServerID: bl.ServerID, Heartbeat: bl.Heartbeat.D(), Where: "backends." + e.name + ".binlog"}
		if len(bl.Tables) > 0 {
			o.Tables = map[string]binlog.Table{}
			for name, t := range bl.Tables {
				o.Tables[name] = binlog.Table(t)
			}
		}
		db, dsn := st.Source()
		f, err := binlog.New(db, dsn, e.log, o)
		if err != nil {
			return nil, fmt.Errorf("backends.%s.binlog: %w", e.name, err)
		}
		fs = append(fs, f)
	}
	return fs, nil
}

// crmFeeds are a CRM backend's feeds: the poller with poll_interval.
func crmFeeds(e feedEnv) ([]upstream.ChangeFeed, error) {
	interval := e.cfg.Backends[e.name].CRM.PollInterval.D()
	if interval <= 0 {
		return nil, nil
	}
	var scopes []upstream.Scope
	for _, u := range e.cfg.UpstreamTenants(e.name) {
		for _, c := range e.cfg.Countries {
			scopes = append(scopes, upstream.Scope{Tenant: u, Country: c})
		}
	}
	if len(scopes) == 0 {
		return nil, nil
	}
	p, err := poll.New(poll.Options{Backend: e.decorated, Scopes: scopes, Interval: interval, Logger: e.log,
		Calls: func(upstream.Scope) { e.metrics.PollCall(e.name) }})
	if err != nil {
		return nil, fmt.Errorf("backend %s: %w", e.name, err)
	}
	return []upstream.ChangeFeed{p}, nil
}

// webhookFeed is the receiver of the backend's tenants that have a
// webhook_secret; nil when none has.
func webhookFeed(e feedEnv) (*webhook.Receiver, error) {
	ts := map[string]webhook.Tenant{}
	for _, tn := range e.cfg.TenantsOf(e.name) {
		if t := e.cfg.Tenants[tn]; t.WebhookSecret != "" {
			ts[tn] = webhook.Tenant{Upstream: t.UpstreamTenant, Secret: []byte(t.WebhookSecret)}
		}
	}
	if len(ts) == 0 {
		return nil, nil
	}
	rc, err := webhook.New(webhook.Options{Tenants: ts, Logger: e.log})
	if err != nil {
		return nil, fmt.Errorf("backend %s: %w", e.name, err)
	}
	return rc, nil
}
