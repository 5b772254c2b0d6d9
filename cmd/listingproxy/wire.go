package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"

	"listingproxy/admin"
	"listingproxy/cache"
	"listingproxy/cache/disktier"
	"listingproxy/cache/redistier"
	"listingproxy/config"
	"listingproxy/freshness"
	"listingproxy/internal/onewrite"
	"listingproxy/internal/serving"
	"listingproxy/internal/warmup"
	"listingproxy/proxy"
	"listingproxy/telemetry"
	"listingproxy/upstream"
	"listingproxy/upstream/breaker"
	"listingproxy/upstream/crm"
)

// app is the wired service: the public handler, the admin handler, and what
// must be closed on shutdown.
type app struct {
	handler http.Handler
	admin   http.Handler
	cache   *cache.Store
	// shared is the Redis second tier of cache.shared; nil without one.
	shared *redistier.Tier
	// disk is the disk tier of cache.disk; nil without one.
	disk *disktier.Tier
	// warm is cache.warm's warm-up; nil without one.
	warm    *warmup.Warmer
	srv     *proxy.Server
	tracing *telemetry.Tracing
	metrics *telemetry.Metrics
	// breakers are every backend's breakers and bulkheads.
	breakers *breaker.Registry
	errors   *telemetry.ErrorDigest // aggregated backend failures
	log      *slog.Logger
	// cfg is the configuration in force; only reload (one goroutine)
	// replaces it.
	cfg     *config.Config
	closers []func()
	// draining is the drain before shutdown (serving.Run): /readyz
	// answers 503 and responses carry Connection: close.
	draining serving.Draining
}

func (a *app) Close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
}

// deps are build's injected dependencies beyond the configuration.
type deps struct {
	log *slog.Logger
	now func() time.Time
	// stdout receives the stdout trace exporter's spans. Default io.Discard.
	stdout io.Writer
	// getenv reads OTEL_SDK_DISABLED and OTEL_TRACES_SAMPLER. Default: none
	// set.
	getenv func(string) string
	// tracerProvider, when set, replaces the one the configuration
	// describes (tests pass an SDK provider with an in-memory exporter).
	tracerProvider trace.TracerProvider
	// warmWait, when set, replaces the warm-up's pacing by each backend's
	// budget (tests count and gate the replays).
	warmWait func(ctx context.Context, tenant string) error
	// registry, when set, replaces the new metrics registry (a test
	// registers a family first).
	registry *prometheus.Registry
}

// build turns a validated configuration into a running service's parts.
func build(ctx context.Context, cfg *config.Config, log *slog.Logger, now func() time.Time) (*app, error) {
	return buildWith(ctx, cfg, deps{log: log, now: now})
}

func buildWith(ctx context.Context, cfg *config.Config, d deps) (_ *app, err error) {
	log, now := d.log, d.now
	if d.stdout == nil {
		d.stdout = io.Discard
	}
	if d.getenv == nil {
		d.getenv = func(string) string { return "" }
	}
	a := &app{log: log, cfg: cfg}
	defer func() {
		if err != nil {
			a.Close()
		}
	}()

	reg := d.registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	if a.metrics, err = telemetry.NewMetrics(reg); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	tp := d.tracerProvider
	if tp == nil {
		to := cfg.Telemetry.TraceOptions()
		to.Stdout, to.Getenv, to.Log, to.Now, to.ExportFailed = d.stdout, d.getenv, log, now, a.metrics.TraceExportFailures.Inc
		a.tracing, err = telemetry.NewTracing(ctx, to)
		if err != nil {
			return nil, err
		}
		a.closers = append(a.closers, func() { a.flushTraces(context.Background()) })
		tp = a.tracing.Provider()
	}
	a.metrics.ConfigLoaded(now())

	a.breakers = breaker.NewRegistry(breaker.Options{
		Settings: cfg.Breaker.Settings(), Now: now, TracerProvider: tp,
		OnStateChange: func(backend, tenant string, from, to breaker.State) {
			a.metrics.BreakerTransition(backend, tenant, from, to)
			log.Warn("breaker state change", "backend", backend, "upstream_tenant", tenant, "from", from.String(), "to", to.String())
		},
	})
	backends := map[string]upstream.Backend{}  // as opened: /backends reports on them
	decorated := map[string]upstream.Backend{} // what the proxy calls
	for _, name := range slices.Sorted(maps.Keys(cfg.Backends)) {
		b, closer, err := openBackend(ctx, name, cfg, log, now, tp)
		if err != nil {
			return nil, err
		}
		a.closers = append(a.closers, closer)
		backends[name] = b
		decorated[name] = a.decorate(name, cfg, b, tp)
		if c, ok := b.(*crm.Client); ok {
			a.metrics.WatchCRM(name, c.Stats)
		}
	}
	a.metrics.WatchBackendReady(backends)

	for name, t := range cfg.Tenants {
		if t.RateLimit != nil {
			a.metrics.InitTenantLimit(name)
		}
	}
	opts, err := cfg.ProxyOptions()
	if err != nil {
		return nil, err
	}
	opts.Now, opts.Logger, opts.TracerProvider = now, log, tp
	opts.Observe = func(w http.ResponseWriter, i proxy.RequestInfo) {
		telemetry.Annotate(w, telemetry.Annotation{Tenant: i.Tenant, Backend: i.Backend, User: i.User, Cache: i.Cache, AuthFailed: i.AuthFailed, Err: i.Err,
			Refused: i.Tenant == "" && i.Rejection != "", Invalid: i.CriteriaErrors != nil})
		if i.CriteriaErrors != nil || i.UnknownParams != nil {
			a.metrics.ClientMistakes(i.Tenant, i.CriteriaErrors, i.UnknownParams)
		}
		switch i.Rejection {
		case "":
		case proxy.RejectTenantLimit:
			a.metrics.TenantLimited(i.Tenant)
		default:
			a.metrics.AuthRejected(i.Rejection)
		}
	}
	budgets := cfg.Budgets()
	if !cfg.Cache.Disabled {
		co := cfg.CacheOptions()
		co.Now, co.Logger, co.TracerProvider, co.RefreshBudget = now, log, tp, budgets.Allow
		if cfg.Cache.Shared != nil {
			tier, closeTier, err := sharedTier(cfg.Cache, log, reg)
			if err != nil {
				return nil, fmt.Errorf("cache.shared: %w", err)
			}
			a.closers = append(a.closers, closeTier) // after the cache's Close
			a.shared = tier
			co.SecondTier, co.Generations, co.Adopt = tier, tier, proxy.PrepareEntry
		}
		if d := cfg.Cache.Disk; d != nil {
			do := d.Options()
			do.Now, do.Logger = now, log
			tier, err := disktier.Open(do)
			if err != nil {
				return nil, fmt.Errorf("cache.disk: %w", err)
			}
			a.closers = append(a.closers, tier.Close) // after the cache's Close: the queue is written
			a.disk = tier
			co.SecondTier, co.Generations, co.Adopt = tier, tier, proxy.PrepareEntry
			a.metrics.WatchDiskCache(tier.Stats)
		}
		a.cache, err = cache.New(co)
		if err != nil {
			return nil, fmt.Errorf("cache: %w", err)
		}
		a.closers = append(a.closers, a.cache.Close)
		opts.Cache = a.cache
		a.metrics.WatchCache(a.cache.Stats)
	}
	purged := func(p telemetry.Purge) { a.metrics.Purged(now(), p) }
	fo := freshness.Options{Purged: purged, Metrics: a.metrics, Logger: log, Now: now}
	if a.shared != nil {
		fo.Lease = a.shared // one replica of the fleet runs each feed
	}
	stopFeeds, hooks, err := startFeeds(cfg, backends, decorated, a.cache, a.metrics, fo)
	if err != nil {
		return nil, err
	}
	a.closers = append(a.closers, stopFeeds)
	opts.Webhooks = hooks

	a.srv, err = proxy.New(cfg.ProxyUsers(), cfg.ProxyTenants(decorated), opts)
	if err != nil {
		return nil, err
	}
	a.metrics.WatchBreakers(a.breakers.States)
	a.metrics.WatchLimits(a.breakers.Limits)
	a.metrics.WatchCappedLists(a.srv.CappedLists)
	if w := cfg.Cache.Warm; w != nil && a.cache != nil {
		a.metrics.WatchWarm(func() (done, failed, skipped uint64) {
			st := a.srv.WarmStats()
			return st.Done, st.Failed, st.Skipped
		})
		wait := d.warmWait
		if wait == nil {
			wait = budgets.Wait
		}
		a.warm = warmup.Start(a.srv, warmup.Options{File: w.File, Keys: w.Keys, ReadyTimeout: w.ReadyTimeout.D(), Wait: wait, Logger: log})
		a.closers = append(a.closers, a.warm.Close) // before the cache's Close: the last run ends, the file is written
	}
	// Outermost first: the drain's Connection: close goes on every
	// response; the server span (continuing an incoming traceparent) must
	// exist before the access log reads its trace id, and the access log
	// must sit outside the proxy's ServeMux to learn the matched route.
	a.errors = telemetry.NewErrorDigest(telemetry.DigestOptions{Logger: log, Now: now})
	a.closers = append(a.closers, a.errors.Flush)
	a.handler = onewrite.Handler(a.draining.Handler(telemetry.ServerHandler(telemetry.Middleware(telemetry.AccessOptions{
		Logger: log, Metrics: a.metrics, TrustedProxies: cfg.Server.TrustedPrefixes(), Errors: a.errors, Tracing: tp != nil,
	})(a.srv), tp)))
	metrics := promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)})
	a.admin = admin.New(a.adminOptions(cfg, backends, metrics, purged))
	if err := a.metrics.Err(); err != nil { // a family registered twice: a bug of this file
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return a, nil
}

// flushTraces exports the spans still buffered, within ctx.
func (a *app) flushTraces(ctx context.Context) {
	if err := a.tracing.Shutdown(ctx); err != nil {
		a.log.Warn("flushing traces", "err", err)
	}
}

// decorate is the one place a backend's decorators are composed. From the
// inside out:
//
//  1. telemetry: the backend.* span, latency and errors of the backend
//     call alone (a call the breaker refuses never reaches the backend,
//     so it is not a backend error);
//  2. breakers and the concurrency limit (upstream/breaker): per tenant
//     and backend; their "breaker" span is the parent of the backend span,
//     and a wait for a slot is outside the backend's latency and counted
//     by no breaker.
//
// A new concern (a shared second tier, a per-tenant limit) is one more
// upstream.Wrap here, at the place its order says.
func (a *app) decorate(name string, cfg *config.Config, b upstream.Backend, tp trace.TracerProvider) upstream.Backend {
	be := cfg.Backends[name]
	b = telemetry.InstrumentBackend(b, telemetry.BackendOptions{Name: name, Kind: be.Kind, TracerProvider: tp, Metrics: a.metrics})
	upstreams := cfg.UpstreamTenants(name)
	a.metrics.InitBreakers(name, upstreams)
	k := backendKinds[be.Kind]
	return a.breakers.Wrap(b, breaker.Backend{Name: name, Limit: k.concurrency(be), Adaptive: k.adaptive, Tenants: upstreams})
}
