package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"sort"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"

	"listingproxy/cache"
	"listingproxy/config"
	"listingproxy/proxy"
	"listingproxy/upstream"
	"listingproxy/upstream/crm"
	"listingproxy/upstream/sqlstore"
	"listingproxy/upstream/sqlstore/demo"
)

// app is the wired service: the public handler, the admin handler, and what
// must be closed on shutdown.
type app struct {
	handler http.Handler
	admin   http.Handler
	cache   *cache.Store
	closers []func()
}

func (a *app) Close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
}

// pinger is a backend that can say whether it is reachable.
type pinger interface{ Ping(context.Context) error }

// build turns a validated configuration into a running service's parts.
func build(ctx context.Context, cfg *config.Config, log *slog.Logger, now func() time.Time) (_ *app, err error) {
	a := &app{}
	defer func() {
		if err != nil {
			a.Close()
		}
	}()

	backends := map[string]upstream.Backend{}
	for _, name := range sortedKeys(cfg.Backends) {
		b, closer, err := openBackend(ctx, name, cfg, log, now)
		if err != nil {
			return nil, err
		}
		backends[name] = b
		a.closers = append(a.closers, closer)
	}

	tenants := make([]proxy.Tenant, 0, len(cfg.Tenants))
	for _, name := range sortedKeys(cfg.Tenants) {
		t := cfg.Tenants[name]
		tenants = append(tenants, proxy.Tenant{Name: name, Backend: backends[t.Backend], BackendName: t.Backend, Upstream: t.UpstreamTenant})
	}
	users := make([]proxy.User, len(cfg.Users))
	for i, u := range cfg.Users {
		users[i] = proxy.User{Username: u.Username, PasswordHash: []byte(u.PasswordBcrypt), Tenant: u.Tenant, Permissions: permissions(u.Permissions)}
	}

	zones := map[string]*time.Location{}
	for _, c := range cfg.Countries {
		loc, err := time.LoadLocation(config.Zones[c])
		if err != nil {
			return nil, fmt.Errorf("country %s: time zone %s: %w", c, config.Zones[c], err)
		}
		zones[c] = loc
	}

	opts := proxy.Options{Countries: zones, MaxResults: cfg.MaxResults, Now: now, Logger: log}
	if !cfg.Cache.Disabled {
		a.cache, err = cache.New(cache.Options{MaxBytes: int64(cfg.Cache.MaxBytes), Now: now, Logger: log})
		if err != nil {
			return nil, fmt.Errorf("cache: %w", err)
		}
		a.closers = append(a.closers, a.cache.Close)
		opts.Cache = a.cache
		opts.Policy = policies(cfg.Cache)
	}
	opts.Breakers = map[string]*cache.Breaker{}
	for name := range backends {
		opts.Breakers[name] = cache.NewBreaker(breakerOptions(name, cfg.Breaker, log))
	}

	srv, err := proxy.New(users, tenants, opts)
	if err != nil {
		return nil, err
	}
	a.handler = srv
	a.admin = adminHandler(cfg, a.cache, backends, opts.Breakers)
	return a, nil
}

func openBackend(ctx context.Context, name string, cfg *config.Config, log *slog.Logger, now func() time.Time) (upstream.Backend, func(), error) {
	b := cfg.Backends[name]
	switch b.Kind {
	case config.KindCRM:
		creds := map[string]crm.Credential{}
		for _, tn := range sortedKeys(cfg.Tenants) {
			t := cfg.Tenants[tn]
			if t.Backend == name {
				creds[t.UpstreamTenant] = crm.Credential{Username: t.UpstreamUsername, Password: t.UpstreamPassword}
			}
		}
		mode, err := crm.ParseHydrateMode(b.Hydrate)
		if err != nil {
			return nil, nil, fmt.Errorf("backend %s: %w", name, err)
		}
		c, err := crm.New(crm.Options{
			BaseURL: b.URL, Credentials: creds, Timeout: b.Timeout.D(), MaxConcurrency: b.MaxConcurrency,
			MaxBodyBytes: int64(b.MaxBodyBytes), Hydrate: mode, HydrateConcurrency: b.HydrateConcurrency,
			DocTTL: b.DocTTL.D(), Now: now,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("backend %s: %w", name, err)
		}
		return c, func() {}, nil
	default:
		st, err := sqlstore.Open(ctx, sqlstore.Config{
			Dialect: b.Kind, DSN: b.DSN, Now: now, MaxOpenConns: b.MaxOpenConns,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("backend %s: %w", name, err)
		}
		if b.SeedDemo {
			if err := seedIfEmpty(ctx, st, now, log, name); err != nil {
				st.Close()
				return nil, nil, fmt.Errorf("backend %s: %w", name, err)
			}
		}
		return st, func() { st.Close() }, nil
	}
}

func seedIfEmpty(ctx context.Context, st *sqlstore.Store, now func() time.Time, log *slog.Logger, name string) error {
	if err := st.Migrate(ctx); err != nil {
		return err
	}
	empty, err := st.Empty(ctx)
	if err != nil || !empty {
		return err
	}
	start := time.Now()
	if err := st.SeedDemo(ctx, demo.Options{Now: now()}); err != nil {
		return fmt.Errorf("seed demo data: %w", err)
	}
	log.Info("seeded demo data", "backend", name, "took", time.Since(start).Round(time.Millisecond).String())
	return nil
}

func permissions(names []string) proxy.Permissions {
	var p proxy.Permissions
	for _, n := range names {
		switch n {
		case config.PermFull:
			p |= proxy.PermFull
		case config.PermPrices:
			p |= proxy.PermPrices
		}
	}
	return p
}

func policies(c config.Cache) func(string) cache.Policy {
	m := map[string]cache.Policy{}
	for _, r := range config.Resources {
		m[r] = cache.Policy{
			TTL: c.ResourceTTL(r), StaleWhileRevalidate: c.StaleWhileRevalidate.D(), StaleIfError: c.StaleIfError.D(),
			NegativeTTL: c.NegativeTTL.D(), FillTimeout: c.FillTimeout.D(),
		}
	}
	return func(resource string) cache.Policy { return m[resource] }
}

func breakerOptions(name string, c config.Breaker, log *slog.Logger) cache.BreakerOptions {
	return cache.BreakerOptions{
		Name: name, ConsecutiveFailures: c.Failures, FailureRatio: c.FailureRatio, MinRequests: c.MinRequests,
		Window: c.Window.D(), OpenFor: c.OpenFor.D(), HalfOpenProbes: c.HalfOpenProbes,
		IsAnswer: isAnswer,
		OnStateChange: func(name string, from, to cache.State) {
			log.Warn("breaker state change", "backend", name, "from", from.String(), "to", to.String())
		},
	}
}

// isAnswer reports backend errors that are answers, not failures: they never
// count against a breaker.
func isAnswer(err error) bool {
	var ce *upstream.CriteriaError
	return errors.Is(err, upstream.ErrNotFound) || errors.As(err, &ce) || errors.Is(err, context.Canceled)
}

// adminHandler serves the operator endpoints on the admin listener.
func adminHandler(cfg *config.Config, store *cache.Store, backends map[string]upstream.Backend, breakers map[string]*cache.Breaker) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		var problems []string
		for _, name := range sortedKeys(backends) {
			if p, ok := backends[name].(pinger); ok {
				if err := p.Ping(ctx); err != nil {
					problems = append(problems, fmt.Sprintf("backend %s: %v", name, err))
				}
			}
		}
		if len(problems) > 0 {
			http.Error(w, strings.Join(problems, "\n"), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.Handle("POST /cache/purge", adminAuth(cfg.Admin, purgeHandler(cfg, store)))
	return mux
}

// purgeHandler drops a tenant's cached bodies: POST /cache/purge?tenant=T
// [&resource=properties|property|agents|agent].
func purgeHandler(cfg *config.Config, store *cache.Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if store == nil {
			http.Error(w, "cache is disabled", http.StatusConflict)
			return
		}
		tenant, resource := r.URL.Query().Get("tenant"), r.URL.Query().Get("resource")
		if _, ok := cfg.Tenants[tenant]; !ok {
			http.Error(w, fmt.Sprintf("unknown tenant %q", tenant), http.StatusBadRequest)
			return
		}
		if resource != "" && !contains(config.Resources, resource) {
			http.Error(w, fmt.Sprintf("unknown resource %q (want %s)", resource, strings.Join(config.Resources, ", ")), http.StatusBadRequest)
			return
		}
		store.Purge(tenant, resource)
		fmt.Fprintf(w, "purged tenant=%s resource=%s\n", tenant, orAll(resource))
	})
}

func adminAuth(c config.Admin, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		if c.Username == "" || !ok || user != c.Username ||
			bcrypt.CompareHashAndPassword([]byte(c.PasswordBcrypt), []byte(pass)) != nil {
			w.Header().Set("WWW-Authenticate", `Basic realm="listingproxy admin"`)
			http.Error(w, "admin credentials required", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func orAll(s string) string {
	if s == "" {
		return "all"
	}
	return s
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
