// Package admin owns the admin listener's HTTP API: GET /healthz (the
// process answers), GET /readyz (it can serve: not draining), GET /metrics,
// and behind the operator's credentials GET /backends (each backend's
// readiness, a ping and its breakers), /debug/pprof, POST /cache/purge and
// the status page (GET /status, /status.json).
//
// It takes what it reports on and acts on as small interfaces it declares
// (Purger, BreakerStates, Backend's functions) in an Options struct, never
// configuration types, so it is tested with fakes and httptest alone. It
// must not import config, proxy or cmd; it imports cache (purge modes),
// upstream/breaker (breaker states) and telemetry (the purge event) for
// their types.
package admin

import (
	"context"
	"fmt"
	"net/http"
	"net/http/pprof"
	"slices"
	"strings"

	"listingproxy/cache"
	"listingproxy/telemetry"
	"listingproxy/upstream/breaker"
)

// Options are the admin API's dependencies. The zero value serves
// /healthz and /readyz; the rest say what they enable.
type Options struct {
	// Username and PasswordBcrypt are the operator's credentials, which
	// every endpoint but /healthz, /readyz and /metrics requires. No
	// username: those endpoints answer 401 (pprof and purges are off).
	Username       string
	PasswordBcrypt string
	// Metrics serves GET /metrics. Nil: 404.
	Metrics http.Handler
	// Draining reports the drain before shutdown: /readyz answers 503
	// while it is true. Nil: never draining.
	Draining func() bool
	// Purger purges cached bodies (a *cache.Store). Nil: the cache is
	// disabled, and a purge answers 409.
	Purger Purger
	// Tenants and Resources are the names a purge accepts.
	Tenants   []string
	Resources []string
	// Purged is told of every purge made (metrics, recent events). Nil:
	// nothing.
	Purged func(telemetry.Purge)
	// Backends are what GET /backends reports on, by name; Breakers lists
	// their breakers' states (a *breaker.Registry). Nil Breakers: none.
	Backends []Backend
	Breakers BreakerStates
	// StatusPage serves GET /status and GET /status.json (statuspage).
	// Nil: 404.
	StatusPage http.Handler
}

// Purger purges cached bodies (cache.Store.PurgeContext). Its error says
// the purge was applied to this process only: a shared tier could not
// record it for the fleet.
type Purger interface {
	PurgeContext(ctx context.Context, p cache.Purge) error
}

// BreakerStates lists every breaker's state (breaker.Registry.States).
type BreakerStates interface {
	States() []breaker.Status
}

// New returns the admin API's handler.
func New(o Options) http.Handler {
	mux := http.NewServeMux()
	auth := newOperatorAuth(o.Username, o.PasswordBcrypt).require
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	if o.Metrics != nil {
		mux.Handle("GET /metrics", o.Metrics)
	}
	// Readiness is "this process can answer": it is listening (the admin
	// listener opens after the public one), its configuration is loaded,
	// and it is not draining. A backend's state does not count: every
	// replica shares its backends, so failing readiness on an open breaker
	// would take them all out of the load balancer at once, and with them
	// the stale bodies kept for exactly that case and the tenants of
	// healthy backends. Backend state is on /backends.
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if o.Draining != nil && o.Draining() {
			http.Error(w, "draining: shutting down", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	// Profiles reveal the command line and cost CPU: admin credentials
	// only, like the purge (none configured: pprof is off).
	prof := http.NewServeMux()
	prof.HandleFunc("/debug/pprof/", pprof.Index)
	prof.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	prof.HandleFunc("/debug/pprof/profile", pprof.Profile)
	prof.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	prof.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.Handle("/debug/pprof/", auth(prof))
	mux.Handle("GET /backends", auth(backendsHandler(o.Backends, o.Breakers)))
	mux.Handle("POST /cache/purge", auth(o.purgeHandler()))
	if o.StatusPage != nil {
		mux.Handle("GET /status", auth(o.StatusPage))
		mux.Handle("GET /status.json", auth(o.StatusPage))
	}
	return mux
}

// purgeHandler purges a tenant's cached bodies: POST /cache/purge?tenant=T
// [&resource=properties|property|agents|agent][&mode=soft|hard]. The default
// mode is soft, as for change notifications: the next request refreshes, and
// the old body is served only when that refresh fails (stale_if_error), so a
// purge during a backend outage does not blank the tenant; hard is for a
// body that must never be served again.
func (o Options) purgeHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o.Purger == nil {
			http.Error(w, "cache is disabled", http.StatusConflict)
			return
		}
		tenant, resource := r.URL.Query().Get("tenant"), r.URL.Query().Get("resource")
		if !slices.Contains(o.Tenants, tenant) {
			http.Error(w, fmt.Sprintf("unknown tenant %q", tenant), http.StatusBadRequest)
			return
		}
		if resource != "" && !slices.Contains(o.Resources, resource) {
			http.Error(w, fmt.Sprintf("unknown resource %q (want %s)", resource, strings.Join(o.Resources, ", ")), http.StatusBadRequest)
			return
		}
		mode := cache.Soft
		switch m := r.URL.Query().Get("mode"); m {
		case "", "soft":
		case "hard":
			mode = cache.Hard
		default:
			http.Error(w, fmt.Sprintf("unknown mode %q (want soft, the default, or hard)", m), http.StatusBadRequest)
			return
		}
		// With cache.shared the purge reaches every replica; when Redis
		// cannot record it, it applied here only: 503, so that the
		// operator (or their script) retries.
		fleetErr := o.Purger.PurgeContext(r.Context(), cache.Purge{Tenant: tenant, Resource: resource, Mode: mode})
		kind := "tenant"
		if resource != "" {
			kind = "resource"
		}
		if o.Purged != nil {
			o.Purged(telemetry.Purge{Source: "admin", Kind: kind, Mode: mode.String(), Tenant: tenant, Target: resource})
		}
		if fleetErr != nil {
			http.Error(w, fmt.Sprintf("purged tenant=%s resource=%s mode=%s on this replica only: the shared tier could not record it for the fleet (%v); retry", tenant, orAll(resource), mode, fleetErr), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, "purged tenant=%s resource=%s mode=%s\n", tenant, orAll(resource), mode)
	})
}

func orAll(s string) string {
	if s == "" {
		return "all"
	}
	return s
}
