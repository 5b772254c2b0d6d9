package main

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"listingproxy/cache"
	"listingproxy/config"
	"listingproxy/freshness"
	"listingproxy/upstream"
	"listingproxy/upstream/sqlstore"
)

// startFeeds opens the change feeds every backend's configuration asks
// for (its kind's feeds function) and runs them (freshness.Start) until
// the returned function is called. Without a cache there is nothing to
// purge, and no feed runs.
func startFeeds(cfg *config.Config, backends, decorated map[string]upstream.Backend, store *cache.Store, o freshness.Options) (func(), error) {
	var feeds []freshness.Feed
	for _, name := range slices.Sorted(maps.Keys(backends)) {
		k := backendKinds[cfg.Backends[name].Kind]
		if k.feeds == nil {
			continue
		}
		fs, err := k.feeds(feedEnv{name: name, cfg: cfg, opened: backends[name], decorated: decorated[name], log: o.Logger, now: o.Now})
		if err != nil {
			return nil, err
		}
		if len(fs) == 0 {
			continue
		}
		if store == nil {
			o.Logger.Warn("change feeds are off: the cache is disabled, so there is nothing to purge", "backend", name)
			continue
		}
		byUpstream := map[string][]string{} // backend tenant -> our tenants
		for _, tn := range slices.Sorted(maps.Keys(cfg.Tenants)) {
			if t := cfg.Tenants[tn]; t.Backend == name {
				byUpstream[t.UpstreamTenant] = append(byUpstream[t.UpstreamTenant], tn)
			}
		}
		for _, f := range fs {
			feeds = append(feeds, freshness.Feed{Backend: name, Feed: f, Tenants: byUpstream})
		}
	}
	if len(feeds) == 0 {
		return func() {}, nil
	}
	o.Purger = store
	return freshness.Start(feeds, o), nil
}

// feedEnv is what a backend kind's feeds function may use: the backend
// as opened (the adapter, which offers the feeds) and as the proxy calls it
// (with its breakers, for a feed that reads through the API).
type feedEnv struct {
	name              string
	cfg               *config.Config
	opened, decorated upstream.Backend
	log               *slog.Logger
	now               func() time.Time
}

// sqlFeeds are a SQL backend's feeds: PostgreSQL's NOTIFY with notify.
func sqlFeeds(e feedEnv) ([]upstream.ChangeFeed, error) {
	if !e.cfg.Backends[e.name].SQL.Notify {
		return nil, nil
	}
	st, ok := e.opened.(*sqlstore.Store)
	if !ok {
		return nil, fmt.Errorf("backend %s: notify: %T is not a SQL store", e.name, e.opened)
	}
	return []upstream.ChangeFeed{st.NotifyFeed()}, nil
}
