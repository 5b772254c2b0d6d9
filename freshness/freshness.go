// Package freshness runs the backends' change feeds (upstream.ChangeFeed:
// PostgreSQL NOTIFY, a MariaDB/MySQL binlog, a CRM's webhooks, a poller of
// a CRM's lists) and turns what they report into soft cache purges through
// the one policy, proxy.ChangePurges. It knows no feed kind: a feed is
// opened by its backend kind's opener in cmd and handed to Start.
//
// In a fleet (Options.Lease set, from the shared tier), one replica holds
// each feed at a time, and its purges reach the other replicas through the
// shared tier as admin purges do; a replica that loses the lease stops its
// feed, one that takes it over starts it (the feed reports a gap, so the
// tenants are soft-purged once). A feed whose input arrives at one replica
// anyway (webhooks, behind the load balancer) runs on every replica
// (PerReplica).
//
// It imports cache (purges), proxy (the purge policy), telemetry (the
// purge events) and upstream (the feed contract); never config or an
// adapter.
package freshness

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"listingproxy/cache"
	"listingproxy/proxy"
	"listingproxy/telemetry"
	"listingproxy/upstream"
)

// Feed is one change feed of one backend.
type Feed struct {
	// Backend is the backend's name (logs, metric labels, the lease name).
	Backend string
	// Feed is the source.
	Feed upstream.ChangeFeed
	// Tenants maps a backend tenant (upstream.Change.Tenant) to our
	// tenants served from it. A change of a backend tenant not in it is
	// ignored; AllTenants concerns every tenant listed.
	Tenants map[string][]string
}

// PerReplica is implemented by a feed whose input reaches one replica of a
// fleet by itself (a webhook behind the load balancer): it runs on every
// replica, never under the lease.
type PerReplica interface {
	PerReplica() bool
}

// Purger applies purges (a *cache.Store). Its error says the purge was
// applied to this process only.
type Purger interface {
	PurgeContext(ctx context.Context, p cache.Purge) error
}

// Lease lets one process of a fleet hold a named lease at a time.
type Lease interface {
	// Hold returns once this process holds the lease name, with a
	// context that ends when it loses it or ctx ends. Its error is ctx's
	// when ctx ended first.
	Hold(ctx context.Context, name string) (context.Context, error)
}

// Metrics is what Start reports to (a *telemetry.Metrics).
type Metrics interface {
	FeedStarted(backend, feed string)
	FeedHeld(backend, feed string, held bool)
	FeedLive(backend, feed string, err error, now time.Time)
	FeedChanged(backend, feed string, gap bool, at, now time.Time)
}

// Options are Start's dependencies. Purger is required; the rest may be
// zero.
type Options struct {
	Purger Purger
	// Purged is told of every purge made (metrics, recent events).
	Purged func(telemetry.Purge)
	// Metrics receives the feeds' state. Nil: none.
	Metrics Metrics
	// Lease, when set, makes one process of the fleet run each feed.
	Lease Lease
	// Logger defaults to discarding.
	Logger *slog.Logger
	// Now defaults to time.Now.
	Now func() time.Time
}

// Start runs feeds until the returned stop is called; stop waits for them.
func Start(feeds []Feed, o Options) (stop func()) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Purged == nil {
		o.Purged = func(telemetry.Purge) {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, f := range feeds {
		if o.Metrics != nil {
			o.Metrics.FeedStarted(f.Backend, f.Feed.Name())
		}
		wg.Go(func() { run(ctx, f, &o) })
	}
	return func() {
		cancel()
		wg.Wait()
	}
}

// run runs one feed: under the lease when there is one, again each time
// the lease is taken back after being lost.
func run(ctx context.Context, f Feed, o *Options) {
	name := f.Feed.Name()
	log := o.Logger.With("backend", f.Backend, "feed", name)
	var all []string
	for _, ts := range f.Tenants {
		all = append(all, ts...)
	}
	slices.Sort(all)
	s := &sink{ctx: ctx, f: f, o: o, log: log, all: slices.Compact(all)}
	pr, perReplica := f.Feed.(PerReplica)
	leased := o.Lease != nil && !(perReplica && pr.PerReplica())
	for ctx.Err() == nil {
		held := ctx
		if leased {
			var err error
			if held, err = o.Lease.Hold(ctx, "feed:"+f.Backend+":"+name); err != nil {
				return
			}
			log.Info("change feed: this replica holds it")
		}
		s.held(true)
		err := f.Feed.Watch(held, s)
		s.held(false)
		if err != nil && held.Err() == nil {
			// A feed returns an error only when it cannot run at all:
			// retrying would spin on the same misconfiguration.
			log.Error("change feed cannot run", "error", err)
			s.Live(err)
			return
		}
		if !leased {
			return
		}
		if ctx.Err() == nil {
			log.Info("change feed: this replica lost the lease")
		}
	}
}

// sink applies one feed's changes.
type sink struct {
	ctx context.Context
	f   Feed
	o   *Options
	log *slog.Logger
	all []string // every tenant of f, for AllTenants
}

func (s *sink) held(h bool) {
	if s.o.Metrics != nil {
		s.o.Metrics.FeedHeld(s.f.Backend, s.f.Feed.Name(), h)
	}
}

// Live implements upstream.ChangeSink.
func (s *sink) Live(err error) {
	if s.o.Metrics != nil {
		s.o.Metrics.FeedLive(s.f.Backend, s.f.Feed.Name(), err, s.o.Now())
	}
}

// Changed implements upstream.ChangeSink: the change's soft purges in
// every tenant served from the changed backend tenant.
func (s *sink) Changed(c upstream.Change) {
	name := s.f.Feed.Name()
	if s.o.Metrics != nil {
		s.o.Metrics.FeedChanged(s.f.Backend, name, c.Gap, c.At, s.o.Now())
	}
	tenants := s.f.Tenants[c.Tenant]
	if c.Tenant == upstream.AllTenants {
		tenants = s.all
	}
	for _, tn := range tenants {
		for _, p := range proxy.ChangePurges(tn, c) {
			if err := s.o.Purger.PurgeContext(s.ctx, p.Purge); err != nil && s.ctx.Err() == nil {
				s.log.Warn("change feed: purge applied on this replica only", "tenant", tn, "error", err)
			}
			s.o.Purged(telemetry.Purge{Source: name, Kind: p.Kind, Mode: p.Mode.String(), Tenant: tn, Target: p.Target})
		}
	}
	if len(tenants) > 0 {
		s.log.Debug("purged on a change", "upstream_tenant", c.Tenant, "resource", c.Resource, "op", c.Op, "gap", c.Gap,
			"properties", len(c.Properties), "agents", len(c.Agents), "tenants", tenants)
	}
}
