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
		byUpstream := cfg.TenantsByUpstream(name)
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
	if sb.Binlog != nil {
		db, dsn := st.Source()
		f, err := binlog.New(db, dsn, e.log, e.cfg.BinlogOptions(e.name))
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
	scopes := e.cfg.PollScopes(e.name)
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
	ts := e.cfg.WebhookTenants(e.name)
	if len(ts) == 0 {
		return nil, nil
	}
	rc, err := webhook.New(webhook.Options{Tenants: ts, Logger: e.log})
	if err != nil {
		return nil, fmt.Errorf("backend %s: %w", e.name, err)
	}
	return rc, nil
}
