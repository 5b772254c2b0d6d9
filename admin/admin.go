// Package admin owns the admin listener's HTTP API: GET / (the list of
// endpoints, text/plain or HTML by Accept), GET /healthz (the
// process answers), GET /readyz (it can serve: not draining), GET /metrics,
// and behind the operator's credentials GET /backends (each backend's
// readiness, a ping and its breakers), /debug/pprof, POST /cache/purge,
// GET /cache/explain and GET /cache/keys (what the cache holds, metadata
// only) and the status page (GET /status, /status.json); and Probe, the
// client of /healthz that "listingproxy healthcheck" runs.
//
// It takes what it reports on and acts on as small interfaces it declares
// (Purger, BreakerStates, Backend's functions) in an Options struct, never
// configuration types, so it is tested with fakes and httptest alone. It
// must not import config, proxy or cmd; it imports cache (purge modes),
// upstream/breaker (breaker states), telemetry (the purge event) and the
// second tiers (their Stats, on GET /backends) for their types.
package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/pprof"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"

	"listingproxy/cache"
	"listingproxy/cache/disktier"
	"listingproxy/cache/redistier"
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
	// Warming reports the warm-up after a start (within its bound):
	// /readyz answers 503 "warming" while it is true. Nil: never.
	Warming func() bool
	// Purger purges cached bodies (a *cache.Store). Nil: the cache is
	// disabled, and a purge answers 409.
	Purger Purger
	// Tenants and Resources are the names a purge accepts.
	Tenants   []string
	Resources []string
	// Targets turns a purge's url and entity ids into cache tags (a
	// *proxy.Server). Nil: purges by url and entity answer 400.
	Targets PurgeTargets
	// Inspector answers GET /cache/explain and GET /cache/keys (a
	// *proxy.Server with a cache). Nil: they answer 409, the cache is
	// disabled.
	Inspector Inspector
	// Purged is told of every purge made (metrics, recent events). Nil:
	// nothing.
	Purged func(telemetry.Purge)
	// Backends are what GET /backends reports on, by name; Breakers lists
	// their breakers' states (a *breaker.Registry). Nil Breakers: none.
	Backends []Backend
	Breakers BreakerStates
	// SharedCache, when set, reports the shared cache tier (cache.shared)
	// on GET /backends from its counters (redistier.Tier.Stats). Nil: no
	// shared tier, no such section.
	SharedCache func() redistier.Stats
	// DiskCache, when set, reports the disk tier (cache.disk) on GET
	// /backends from its counters (disktier.Tier.Stats). Nil: no disk
	// tier, no such section.
	DiskCache func() disktier.Stats
	// StatusPage serves GET /status and GET /status.json (statuspage).
	// Nil: 404.
	StatusPage http.Handler
}

// Purger purges cached bodies (cache.Store.PurgeContext). Its error says
// the purge was applied to this process only: a shared tier could not
// record it for the fleet. Matching counts the entries this process holds
// that a purge covers (cache.Store.Matching), for the purge's answer.
type Purger interface {
	PurgeContext(ctx context.Context, p cache.Purge) error
	Matching(p cache.Purge) int
}

// Inspector explains what the cache holds (proxy.Server.Explain and
// Keys). Each returns a value encoding/json writes, or an error that says,
// for the operator, what is wrong with the request.
type Inspector interface {
	// Explain describes user's request of target: its key, tags, the
	// tier that holds it, its age, and why the next request would miss.
	Explain(ctx context.Context, user, target string) (any, error)
	// Keys lists at most limit of tenant's keys held in this process,
	// after the key after.
	Keys(tenant, after string, limit int) (any, error)
}

// PurgeTargets turns what a purge names into cache tags
// (proxy.Server.URLTag and EntityTag).
type PurgeTargets interface {
	// URLTag returns the tag of a request path with its query, of
	// tenant, canonicalised as a request would be; its error says what is
	// wrong with the URL.
	URLTag(tenant, target string) (cache.Tag, error)
	// EntityTag returns the tag of every body holding the entity: kind
	// is "property" or "agent".
	EntityTag(kind string, id int64) cache.Tag
}

// BreakerStates lists every breaker's state (breaker.Registry.States).
// When it also has breaker.Registry's Limits method, GET /backends shows
// each backend's concurrency limit too.
type BreakerStates interface {
	States() []breaker.Status
}

// New returns the admin API's handler.
func New(o Options) http.Handler {
	mux := http.NewServeMux()
	auth := newOperatorAuth(o.Username, o.PasswordBcrypt).require
	// The list of endpoints, without credentials: it shows no data, and
	// the routes are documented.
	mux.Handle("GET /{$}", indexHandler(o.endpoints()))
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
		if o.Warming != nil && o.Warming() {
			http.Error(w, "warming: fetching the hottest keys again", http.StatusServiceUnavailable)
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
	mux.Handle("GET /backends", auth(backendsHandler(o.Backends, o.Breakers, o.SharedCache, o.DiskCache)))
	mux.Handle("POST /cache/purge", auth(o.purgeHandler()))
	mux.Handle("GET /cache/explain", auth(o.explainHandler()))
	mux.Handle("GET /cache/keys", auth(o.keysHandler()))
	if o.StatusPage != nil {
		mux.Handle("GET /status", auth(o.StatusPage))
		mux.Handle("GET /status.json", auth(o.StatusPage))
	}
	return refuseUncleanPaths(mux)
}

// refuseUncleanPaths answers 400 to a request whose path has an empty, "."
// or ".." segment (//debug/pprof/cmdline, /./, /../) and to CONNECT, which
// the ServeMux would answer itself with a redirect to the cleaned path
// before any credential is checked: a redirect leaks which paths exist
// and invites a client to follow it somewhere it did not ask for.
func refuseUncleanPaths(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodConnect || !cleanPath(r.URL.Path) {
			http.Error(w, "bad request: the path must not contain empty, \".\" or \"..\" segments", http.StatusBadRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// cleanPath reports whether p is already in the form ServeMux routes
// without redirecting: rooted, and equal to path.Clean of itself (with a
// trailing slash kept).
func cleanPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	c := path.Clean(p)
	if p[len(p)-1] == '/' && c != "/" {
		c += "/"
	}
	return c == p
}

// purgeHandler purges cached bodies of a tenant: POST /cache/purge?tenant=T
// and at most one of resource=properties|property|agents|agent (one
// resource), url=PATH?QUERY (one request's bodies for every permission
// level and both formats; its own query percent-encoded), property=ID or
// agent=ID (an entity: every body that holds it, lists included; the
// parameter may repeat), and mode=soft|hard. The default mode is soft, as
// for change notifications: the next request refreshes, and the old body
// is served only when that refresh fails (stale_if_error), so a purge
// during a backend outage does not blank the tenant; hard is for a body
// that must never be served again.
func (o Options) purgeHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o.Purger == nil {
			http.Error(w, "cache is disabled", http.StatusConflict)
			return
		}
		req, err := o.purgeRequest(r.URL.RawQuery)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		// With cache.shared the purge reaches every replica. When Redis
		// cannot record it now, the shared tier retries until it has
		// (ErrPurgePending): 202, nothing for the operator to do. Any
		// other failure applied it here only: 503, so that the operator
		// (or their script) retries. The count is of the entries this
		// replica held that the purge covered, taken just before it.
		req.matched = o.Purger.Matching(req.purge)
		fleetErr := o.Purger.PurgeContext(r.Context(), req.purge)
		if o.Purged != nil {
			o.Purged(telemetry.Purge{Source: "admin", Kind: req.kind, Mode: req.purge.Mode.String(), Tenant: req.purge.Tenant, Target: req.target})
		}
		if errors.Is(fleetErr, cache.ErrPurgePending) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprintf(w, "purged %s on this replica; the shared tier has not recorded it for the fleet yet and retries until it has (%v)\n", req, fleetErr)
			return
		}
		if fleetErr != nil {
			http.Error(w, fmt.Sprintf("purged %s on this replica only: the shared tier could not record it for the fleet (%v); retry", req, fleetErr), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, "purged %s\n", req)
	})
}

// purgeRequest is a checked purge: what to purge, and its kind and target
// for events and answers.
type purgeRequest struct {
	purge        cache.Purge
	kind, target string
	what         string // "resource=…", "url=…", "property=…"
	matched      int    // entries held here that it covered
}

func (p purgeRequest) String() string {
	return fmt.Sprintf("tenant=%s %s mode=%s matched=%d", p.purge.Tenant, p.what, p.purge.Mode, p.matched)
}

// purgeParams are the parameters POST /cache/purge takes.
var purgeParams = []string{"tenant", "resource", "url", "property", "agent", "mode"}

// purgeRequest checks a purge's query; its error is the 400's message.
func (o Options) purgeRequest(raw string) (purgeRequest, error) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return purgeRequest{}, fmt.Errorf("malformed query: %v", err)
	}
	if q.Get("resource") == "" {
		q.Del("resource") // resource= names every resource, as before
	}
	for name, vs := range q {
		switch {
		case !slices.Contains(purgeParams, name):
			return purgeRequest{}, fmt.Errorf("unknown parameter %q (want %s; percent-encode the query of a url, e.g. curl --data-urlencode)", name, strings.Join(purgeParams, ", "))
		case len(vs) > 1 && name != "property" && name != "agent":
			return purgeRequest{}, fmt.Errorf("parameter %q given %d times (want once)", name, len(vs))
		}
	}
	tenant := q.Get("tenant")
	if !slices.Contains(o.Tenants, tenant) {
		return purgeRequest{}, fmt.Errorf("unknown tenant %q", tenant)
	}
	var named []string
	for _, n := range purgeParams[1:5] {
		if q.Has(n) {
			named = append(named, n)
		}
	}
	if len(named) > 1 {
		return purgeRequest{}, fmt.Errorf("give at most one of resource, url, property and agent (got %s)", strings.Join(named, " and "))
	}
	req := purgeRequest{purge: cache.Purge{Tenant: tenant}, kind: "tenant", what: "resource=all"}
	switch m := q.Get("mode"); m {
	case "", "soft":
	case "hard":
		req.purge.Mode = cache.Hard
	default:
		return purgeRequest{}, fmt.Errorf("unknown mode %q (want soft, the default, or hard)", m)
	}
	switch {
	case q.Has("resource"):
		resource := q.Get("resource")
		if !slices.Contains(o.Resources, resource) {
			return purgeRequest{}, fmt.Errorf("unknown resource %q (want %s)", resource, strings.Join(o.Resources, ", "))
		}
		req.purge.Resource, req.kind, req.target, req.what = resource, "resource", resource, "resource="+resource
	case q.Has("url"):
		if o.Targets == nil {
			return purgeRequest{}, errors.New("purges by url are not available here")
		}
		u := q.Get("url")
		tag, err := o.Targets.URLTag(tenant, u)
		if err != nil {
			return purgeRequest{}, err
		}
		req.purge.Tags, req.kind, req.target, req.what = []cache.Tag{tag}, "url", u, "url="+u
	case q.Has("property") || q.Has("agent"):
		if o.Targets == nil {
			return purgeRequest{}, errors.New("purges by entity are not available here")
		}
		kind := named[0]
		var ids []string
		for _, v := range q[kind] {
			id, err := strconv.ParseInt(v, 10, 64)
			if err != nil || id <= 0 {
				return purgeRequest{}, fmt.Errorf("%s id %q is not a positive whole number", kind, v)
			}
			req.purge.Tags = append(req.purge.Tags, o.Targets.EntityTag(kind, id))
			ids = append(ids, strconv.FormatInt(id, 10))
		}
		req.kind, req.target, req.what = "entity", kind+" "+strings.Join(ids, ","), kind+"="+strings.Join(ids, ",")
	}
	return req, nil
}

// explainHandler answers GET /cache/explain?user=U&url=PATH?QUERY (the
// url's own query percent-encoded, as for a purge): the JSON explanation
// of what the cache holds for that user's request of that URL (Inspector).
func (o Options) explainHandler() http.Handler {
	return o.inspect([]string{"user", "url"}, func(r *http.Request, q url.Values) (any, error) {
		if q.Get("user") == "" || q.Get("url") == "" {
			return nil, errors.New("give user and url (the url's own query percent-encoded, e.g. curl -G --data-urlencode)")
		}
		return o.Inspector.Explain(r.Context(), q.Get("user"), q.Get("url"))
	})
}

// Bounds of GET /cache/keys's page.
const (
	defaultKeysPage = 100
	maxKeysPage     = 1000
)

// keysHandler answers GET /cache/keys?tenant=T[&limit=N][&after=KEY]: a
// page of the tenant's keys this process holds, as JSON (Inspector); the
// page's next is the after of the following one.
func (o Options) keysHandler() http.Handler {
	return o.inspect([]string{"tenant", "limit", "after"}, func(r *http.Request, q url.Values) (any, error) {
		tenant := q.Get("tenant")
		if !slices.Contains(o.Tenants, tenant) {
			return nil, fmt.Errorf("unknown tenant %q", tenant)
		}
		limit := defaultKeysPage
		if v := q.Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > maxKeysPage {
				return nil, fmt.Errorf("limit %q is not a whole number from 1 to %d", v, maxKeysPage)
			}
			limit = n
		}
		return o.Inspector.Keys(tenant, q.Get("after"), limit)
	})
}

// inspect makes the handler of an inspection: the query checked (only
// params, each at most once), then answer's value as JSON, or its error
// as a 400.
func (o Options) inspect(params []string, answer func(*http.Request, url.Values) (any, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o.Inspector == nil {
			http.Error(w, "cache is disabled", http.StatusConflict)
			return
		}
		q, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			http.Error(w, fmt.Sprintf("malformed query: %v", err), http.StatusBadRequest)
			return
		}
		for name, vs := range q {
			switch {
			case !slices.Contains(params, name):
				http.Error(w, fmt.Sprintf("unknown parameter %q (want %s; percent-encode the query of a url)", name, strings.Join(params, ", ")), http.StatusBadRequest)
				return
			case len(vs) > 1:
				http.Error(w, fmt.Sprintf("parameter %q given %d times (want once)", name, len(vs)), http.StatusBadRequest)
				return
			}
		}
		v, err := answer(r, q)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(append(b, '\n'))
	})
}
