// Package proxy owns listingproxy's HTTP surface: the routes of the listing
// API, HTTP Basic authentication and the limits on its cost (auth.go,
// limits.go: a bcrypt pool, failure buckets per client address and
// username, per-tenant rate limits), criteria errors and permissions, the
// cache lookup around each backend call, rendering (through listingproxy/wire),
// and the one table that maps errors to HTTP statuses and the spec's error
// bodies.
//
// It never imports database/sql or config: backends arrive as
// upstream.Backend values, settings as constructor arguments. For telemetry
// it uses the OpenTelemetry trace API only (never the SDK) and reports each
// request through Options.Observe; it knows nothing of Prometheus or log
// formats.
package proxy

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"

	"listingproxy/cache"
	"listingproxy/normalize"
	"listingproxy/upstream"
	"listingproxy/wire"
)

// Tenant is a client/agency: its users see only what its backend returns for
// its scope.
type Tenant struct {
	Name        string           // the tenant's name in listingproxy (cache key, logs)
	Backend     upstream.Backend // where its data lives
	BackendName string           // for logs and metrics
	Upstream    string           // the tenant's identity at the backend (Scope.Tenant)
	// RateLimit bounds the tenant's API requests (all of them, cache hits
	// included); past it the answer is 429. The zero Limit: none.
	RateLimit Limit
	// MaxResults overrides Options.MaxResults for this tenant: 0 keeps it;
	// negative means no cap, the limit the client gave (or none) goes to
	// the backend, which decides (a legacy CRM, as it did for its clients).
	MaxResults int
	// MaxOffset overrides Options.MaxOffset for this tenant: 0 keeps it;
	// negative means no cap (a legacy CRM's tenants unless their backend
	// sets one).
	MaxOffset int
	// JSONSingleObject renders a JSON collection of exactly one item as
	// that object rather than a one-element array, as some old clients
	// expect (docs/api.md, compatibility switches). Default off.
	JSONSingleObject bool
	// JSONSingleObjectItems limits that to the collections of the named
	// items ("property"); JSONNumericIDs writes ids as JSON numbers;
	// JSONVideoURL writes a CRM's videos as objects with a "url" (docs/api.md,
	// compatibility switches). Default off.
	JSONSingleObjectItems map[string]bool
	JSONNumericIDs        bool
	JSONVideoURL          bool
	// ExtraFields names elements and attributes a legacy CRM sends that
	// the wire format does not: every caller of the tenant may see them in
	// a passed-through record. Others reach only callers whose permissions
	// are no narrower than the upstream user's (full and prices).
	ExtraFields map[string]bool
	// ShareFetch makes one backend call serve every format and permission
	// level of a request: the backend's answer is kept in the cache as its
	// own entry (see sharedFetch) and each variant's body is rendered from
	// it. For backends whose answers pass through (a legacy CRM).
	ShareFetch bool
	// StrictParams answers a list request carrying a parameter the list
	// does not take with the spec's error list (one error per such
	// parameter), instead of ignoring it. Default off: ignored, as the
	// spec's lists ignore what they do not know, and only counted.
	StrictParams bool

	limiter *rate.Limiter // from RateLimit; nil: no limit
}

// Options are the optional knobs of a Server. The zero value works: no cache,
// countries au and nz, 1000 results at most.
type Options struct {
	// Countries maps each served country segment to its time zone. Default:
	// au (Australia/Sydney) and nz (Pacific/Auckland).
	Countries map[string]*time.Location
	// MaxResults is the limit of a list without one and the cap on a given
	// limit. Default DefaultMaxResults.
	MaxResults int
	// MaxOffset is the largest offset a list accepts; a larger one is a
	// criteria error on offset. 0 (the default): no cap.
	MaxOffset int
	// Cache stores rendered bodies. Nil: every request calls the backend.
	Cache *cache.Store
	// Policy returns the freshness policy of a resource ("properties",
	// "property", "agents", "agent"). Default: 60s TTL, 5m
	// stale-while-revalidate, 1h stale-if-error, 10s negative, 10s fill.
	Policy func(resource string) cache.Policy
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Logger receives the detail of failed requests, at debug level.
	// Default: discard. (Access lines and aggregated failures are the
	// Observe hook's business.)
	Logger *slog.Logger
	// TracerProvider makes the spans of a request: proxy.authenticate,
	// proxy.normalize and cache.lookup, children of the span
	// in the request's context (the HTTP server span). Nil: no spans, and
	// no tracing cost on the hit path.
	TracerProvider trace.TracerProvider
	// Observe, when set, is called once per API request after the response
	// is written, with what only the proxy knows (tenant, cache outcome).
	// w is the ResponseWriter the proxy was given (middleware outside the
	// proxy finds its own writer by unwrapping it). It runs on the request's
	// goroutine and should be quick. Default: nothing.
	Observe func(w http.ResponseWriter, info RequestInfo)
	// Auth bounds the cost of authentication (bcrypt pool, failure
	// throttling, memo size); see AuthOptions for the defaults.
	Auth AuthOptions
	// Webhooks, when set, serves POST /hooks/changes/{tenant}: a legacy
	// system's signed change notifications (upstream/webhook), which
	// authenticate by their signature, not by the API's credentials.
	// Nil: that path is a 404 like any unknown one.
	Webhooks http.Handler
	// HotKeys is how many of the requests that fill the cache most often
	// are recorded for a warm-up (HotTargets, WarmUp). Default
	// DefaultHotKeys; negative: none recorded.
	HotKeys int
}

// RequestInfo is what the proxy reports about an answered API request, for
// access logs and metrics. It never holds credentials or query values.
type RequestInfo struct {
	// Tenant is the caller's tenant; "" when authentication failed.
	Tenant string
	// Backend is the name of the tenant's backend; "" when unauthenticated.
	Backend string
	// Cache is how the body was produced: the cache.Outcome's String
	// ("hit", "stale", "stale-if-error", "miss", "negative", "bypass"),
	// "shared-fetch" for a body rendered from a shared fetch the cache
	// already held (Tenant.ShareFetch: no backend call), or "" when the
	// request was answered before the cache (authentication, criteria or
	// permission errors).
	Cache string
	// User is the authenticated username; "" when authentication failed.
	User string
	// AuthFailed reports missing or wrong credentials (a 401).
	AuthFailed bool
	// Err is the failure behind a 5xx answer (backend failure, timeout,
	// open breaker), for the operator's log; nil otherwise. The proxy logs
	// it itself only at debug level, so that an outage does not write a
	// line per request: the observer aggregates.
	Err error
	// Rejection is why the request was refused before its handler ran:
	// RejectMissing or RejectBad (401), RejectThrottled, RejectPoolFull or
	// RejectTenantLimit (429); "" when it was not.
	Rejection string
	// CriteriaErrors names, each once, the parameters of the spec's error
	// list a list request was answered with (invalid criteria, detail=full
	// without the permission, a strict tenant's unknown parameters), as
	// metric labels: the spec's parameter name (normalize.ParamLabel), else
	// "other". Nil when none.
	CriteriaErrors []string
	// UnknownParams labels each query parameter a list request carried
	// that its list does not take (at most normalize.MaxUnknown), as
	// CriteriaErrors does: "bedrooms" on the agents list, "other" for a
	// name the spec does not have. Nil when none. Must not be modified.
	UnknownParams []string
}

// ReloadOptions are the settings Reload replaces. A nil field keeps the
// current value.
type ReloadOptions struct {
	// Policy replaces Options.Policy.
	Policy func(resource string) cache.Policy
}

// CappedLists returns how many backend lists were cut at max_results: a
// list whose limit was the cap (the client asked for more, or gave none)
// and that came back full, so more may match. Each is also logged.
func (s *Server) CappedLists() int64 { return s.capped.Load() }

// Server is the listing API as an http.Handler.
type Server struct {
	tenants    map[string]*Tenant
	countries  map[string]*time.Location
	norm       normalize.Options
	cache      *cache.Store
	now        func() time.Time
	log        *slog.Logger
	mux        *http.ServeMux
	lists      map[string]directRoute // GET routes by last segment, for route
	singles    map[string]directRoute // GET /{country}/{resource}/{file} routes by resource, for route
	memo       *criteriaMemo
	front      *frontMemo          // nil without a cache
	scopes     map[scopeKey]string // cache-key scopes, by permissions, country and format
	tracer     trace.Tracer        // nil: no spans
	observe    func(http.ResponseWriter, RequestInfo)
	date       atomic.Pointer[dateHeader] // the last Date value sent
	guard      *authGuard                 // bcrypt pool and failure buckets, kept across reloads
	capped     atomic.Int64               // lists cut at max_results (see CappedLists)
	hot        *hotKeys                   // the requests that fill the cache most often; nil: not recorded
	tiers      *tierStatuses              // Cache-Status of a second tier's answers; nil: no second tier
	warmSt     [3]atomic.Uint64           // warm-up's done, failed and skipped targets (WarmStats)
	warmRoutes map[string]warmRoute       // the API's handlers by pattern, for WarmUp

	// getPatterns are the GET routes' patterns, in the order registered
	// (the test of the OpenAPI description compares them with its paths).
	getPatterns []string

	// live holds what Reload may replace. A request loads it once and
	// uses that snapshot throughout, so a reload never mixes old users with
	// a new policy within one request.
	live atomic.Pointer[settings]
}

// settings are a Server's reloadable parts; never modified once published.
type settings struct {
	auth   *authenticator
	policy func(string) cache.Policy
}

// New returns the listing API for the given users and tenants.
func New(users []User, tenants []Tenant, o Options) (*Server, error) {
	tm := make(map[string]*Tenant, len(tenants))
	for i := range tenants {
		t := tenants[i]
		if t.Backend == nil {
			return nil, errors.New("proxy: tenant " + t.Name + " has no backend")
		}
		t.limiter = newTenantLimiter(t.RateLimit)
		tm[t.Name] = &t
	}
	if err := checkUsers(users, tm); err != nil {
		return nil, err
	}
	s := &Server{
		tenants:   tm,
		countries: o.Countries,
		norm:      normalize.Options{MaxResults: cmp.Or(o.MaxResults, DefaultMaxResults), MaxOffset: o.MaxOffset},
		cache:     o.Cache,
		now:       o.Now,
		log:       o.Logger,
		observe:   o.Observe,
		memo:      newCriteriaMemo(),
	}
	if o.Cache != nil {
		s.front = newFrontMemo()
	}
	if o.Cache != nil && o.Cache.TierName() != "" {
		s.tiers = newTierStatuses(o.Cache.TierName())
	}
	if o.HotKeys >= 0 && o.Cache != nil {
		s.hot = newHotKeys(cmp.Or(o.HotKeys, DefaultHotKeys))
	}
	if o.TracerProvider != nil {
		s.tracer = o.TracerProvider.Tracer("listingproxy/proxy")
	}
	if s.countries == nil {
		s.countries = map[string]*time.Location{}
		for country, zone := range upstream.CountryZones() {
			s.countries[country] = mustZone(zone)
		}
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.guard = newAuthGuard(o.Auth, s.now)
	st := &settings{auth: newAuthenticator(users, tm, s.guard), policy: o.Policy}
	s.scopes = make(map[scopeKey]string)
	compats := map[string]bool{"": true}
	for i := range users {
		if t := tm[users[i].Tenant]; t != nil {
			c := compatOf(&users[i], t)
			compats[c.key()] = true
		}
	}
	for perms := range PermFull | PermPrices + 1 {
		for country := range s.countries {
			for _, f := range [...]wire.Format{wire.XML, wire.JSON} {
				for compat := range compats {
					if f == wire.XML && compat != "" {
						continue
					}
					s.scopes[scopeKey{perms, country, f, compat}] = scopeOf(perms.String(), country, f, compat)
				}
			}
		}
	}
	if st.policy == nil {
		st.policy = func(string) cache.Policy { return DefaultPolicy }
	}
	s.live.Store(st)
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.mux = http.NewServeMux()
	s.routes()
	if o.Webhooks != nil {
		// Three segments whose second is neither "properties" nor
		// "agents": no API route overlaps it.
		s.mux.Handle("POST /hooks/changes/{tenant}", o.Webhooks)
	}
	return s, nil
}

func checkUsers(users []User, tenants map[string]*Tenant) error {
	for _, u := range users {
		if tenants[u.Tenant] == nil {
			return errors.New("proxy: user " + u.Username + " has unknown tenant " + u.Tenant)
		}
	}
	return nil
}

// Reload replaces the users, and the policy when given, while
// the Server is serving. The change is atomic: each request sees either the
// old settings or the new ones. Verified credentials are forgotten (a
// changed password takes effect at once). Tenants, countries and the cache
// are fixed at New; a user of an unknown tenant is an error and nothing
// changes.
func (s *Server) Reload(users []User, o ReloadOptions) error {
	if err := checkUsers(users, s.tenants); err != nil {
		return err
	}
	old := s.live.Load()
	st := &settings{auth: newAuthenticator(users, s.tenants, s.guard), policy: o.Policy}
	if st.policy == nil {
		st.policy = old.policy
	}
	s.live.Store(st)
	if s.front != nil {
		s.front.clear() // its principals are the old authenticator's
	}
	return nil
}

// DefaultMaxResults is Options.MaxResults's default.
const DefaultMaxResults = 1000

// DefaultPolicy is the freshness policy when Options.Policy is nil, and
// each zero field's default in the one config builds from the configuration
// (docs/configuration.md lists them).
var DefaultPolicy = cache.Policy{
	TTL: 60 * time.Second,
	// As nginx keeps (and, with proxy_cache_use_stale updating, serves)
	// an entry asked for within its default inactive=10m: a key asked
	// again within ten minutes of expiring is answered at once, and
	// refreshed behind (docs/configuration.md, cache.stale_while_revalidate).
	StaleWhileRevalidate: 10 * time.Minute,
	StaleIfError:         time.Hour,
	NegativeTTL:          10 * time.Second,
	FillTimeout:          cache.DefaultFillTimeout,
	RefreshAhead:         DefaultRefreshAhead,
	RefreshHits:          cache.DefaultRefreshHits,
}

// DefaultRefreshAhead is the share of ttl after which a hot entry is
// refreshed before it expires (cache.Policy.RefreshAhead).
const DefaultRefreshAhead = 0.8

// DefaultRefreshBudget is each backend's budget of refreshes ahead of
// expiry, calls a second (cache.Options.RefreshBudget).
const DefaultRefreshBudget = 10

func mustZone(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic("proxy: time zone " + name + ": " + err.Error() + " (import time/tzdata)")
	}
	return loc
}

// ServeHTTP implements http.Handler. Request lines that ServeMux would
// answer itself (a redirect to the cleaned path, an empty 400 for "*") are
// answered first, with the spec's error body (see badRequestLine); every
// other request goes to the routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect || !cleanPath(r.URL.Path) {
		s.badRequestLine(w, r)
		return
	}
	if s.front != nil && s.serveFront(w, r) {
		return
	}
	if h, ok := s.route(r); ok {
		h.ServeHTTP(w, r)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// request is what every API handler receives: the authenticated caller, the
// parsed path, the settings snapshot, and the context that carries the
// request's span (use ctx, not Context()).
type request struct {
	*http.Request
	ctx     context.Context
	st      *settings
	who     *principal
	country string
	loc     *time.Location
	format  wire.Format
	cache   string // the cache outcome, once the cache was consulted
	// warm, set by the warm-up alone (Server.WarmUp), receives the
	// request's cache key; nil for every client request.
	warm *warmCall
}

// apiHandler is an API endpoint: it returns what it knows of its answer
// (handled), and an error instead of writing one. It gets the request by
// value, so that a cache hit allocates no request on the heap (a pointer
// through a function value always escapes); the paths that fill the cache
// copy it to the heap themselves.
type apiHandler func(w http.ResponseWriter, r request) (handled, error)

// handled is what an API handler reports of its answer, for
// Options.Observe.
type handled struct {
	// cache is the cache outcome ("" when the cache was not consulted).
	cache string
	// unknown are the metric labels of the query parameters a list does
	// not take (shared with the criteria memo: not to be modified).
	unknown []string
}

// api adapts an apiHandler to http.Handler: it authenticates, checks the
// country, runs the handler and maps any error through classify.
func (s *Server) api(format wire.Format, h apiHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rq := request{Request: r, ctx: r.Context(), st: s.live.Load(), format: format}
		var unknown []string
		var deny denial
		rq.who, deny = s.authenticate(&rq)
		var err error
		switch {
		case rq.who == nil:
			err = s.refuse(w, r, deny)
		case rq.who.tenant.limiter != nil && s.overLimit(w, rq.who.tenant, &deny):
			err = &Error{Status: http.StatusTooManyRequests, Message: msgTenantLimit}
		case s.front != nil:
			var ok bool
			if rq.cache, unknown, ok = s.answerFront(w, &rq); ok {
				break
			}
			fallthrough
		default:
			rq.country = pathValue(r, "country")
			rq.loc = s.countries[rq.country]
			if rq.loc == nil {
				err = &Error{Status: http.StatusNotFound, Message: "Unknown country " + strconv.Quote(truncate(rq.country, 16))}
			} else {
				var done handled
				done, err = h(w, rq)
				rq.cache, unknown = done.cache, done.unknown
			}
		}
		var failure error
		var criteria []string
		if err != nil {
			if classify(err).Status >= 500 {
				failure = err
			}
			criteria = criteriaLabels(err)
			s.writeError(w, r, format, err)
		}
		if s.observe != nil {
			info := RequestInfo{Cache: rq.cache, AuthFailed: rq.who == nil && (deny.reason == RejectMissing || deny.reason == RejectBad), Rejection: deny.reason, Err: failure,
				CriteriaErrors: criteria, UnknownParams: unknown}
			if rq.who != nil {
				info.Tenant, info.Backend, info.User = rq.who.tenant.Name, rq.who.tenant.BackendName, rq.who.username
			}
			s.observe(w, info)
		}
	})
}

// authenticate runs the authenticator in a proxy.authenticate span and tags
// the server span with the caller's tenant (never the user or credentials).
func (s *Server) authenticate(r *request) (*principal, denial) {
	if s.tracer == nil {
		return r.st.auth.authenticate(r.Request)
	}
	_, span := s.tracer.Start(r.ctx, "proxy.authenticate")
	who, deny := r.st.auth.authenticate(r.Request)
	if who == nil {
		span.SetAttributes(attrAuthResult.String("failed"), attrAuthReason.String(deny.reason))
	} else {
		tenant := attrTenant.String(who.tenant.Name)
		span.SetAttributes(attrAuthResult.String("ok"), tenant)
		trace.SpanFromContext(r.ctx).SetAttributes(tenant)
	}
	span.End()
	return who, deny
}

// refuse returns the error answering a request that was not authenticated,
// with its headers: a 401 challenge, or a 429 with Retry-After, held for
// the refusal delay first (or until the client goes).
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, d denial) error {
	switch d.reason {
	case RejectThrottled, RejectPoolFull:
		if s.guard.delay > 0 {
			t := time.NewTimer(s.guard.delay)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
			}
		}
		w.Header().Set("Retry-After", retryAfter(d.retryAfter))
		if d.reason == RejectPoolFull {
			return &Error{Status: http.StatusTooManyRequests, Message: msgBusy}
		}
		return &Error{Status: http.StatusTooManyRequests, Message: msgThrottled}
	}
	w.Header().Set("WWW-Authenticate", `Basic realm="listings", charset="UTF-8"`)
	return &Error{Status: http.StatusUnauthorized, Message: msgUnauthorized}
}

// overLimit takes a token from t's rate limit; when there is none it sets
// Retry-After, records the denial and reports true. The limit applies
// before the cache, so it bounds the CPU a tenant takes as well as its
// backend calls (docs/security.md).
func (s *Server) overLimit(w http.ResponseWriter, t *Tenant, d *denial) bool {
	wait := allowTenant(t.limiter, s.now())
	if wait == 0 {
		return false
	}
	w.Header().Set("Retry-After", retryAfter(wait))
	*d = denial{reason: RejectTenantLimit, retryAfter: wait}
	return true
}

// Span attributes set by the proxy.
const (
	attrTenant      = attribute.Key("listingproxy.tenant")
	attrResource    = attribute.Key("listingproxy.resource")
	attrAuthResult  = attribute.Key("listingproxy.auth.result")
	attrAuthReason  = attribute.Key("listingproxy.auth.reason")
	attrCacheResult = attribute.Key("listingproxy.cache.outcome")
	attrMemo        = attribute.Key("listingproxy.criteria.memoised")
	attrValid       = attribute.Key("listingproxy.criteria.valid")
)

// noSpan is what startSpan returns when tracing is off: a no-op span that
// costs no allocation.
var noSpan = trace.SpanFromContext(context.Background())

// startSpan starts a child span of ctx when tracing is on. When it is off it
// returns ctx and noSpan without allocating (the noop SDK's Start would
// still allocate a context).
func (s *Server) startSpan(ctx context.Context, name string) (context.Context, trace.Span) {
	if s.tracer == nil {
		return ctx, noSpan
	}
	return s.tracer.Start(ctx, name)
}

// writeError writes err as the spec's error body in the requested format.
// A 5xx is logged at debug level only: Options.Observe receives the failure
// (RequestInfo.Err) and aggregates it, one line per backend per interval.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, f wire.Format, err error) {
	e := classify(err)
	switch {
	case e.Status == 499:
		s.log.DebugContext(r.Context(), "client went away", "path", r.URL.Path, "err", e.Err)
		return
	case e.Status >= 500:
		s.log.DebugContext(r.Context(), "request failed", "path", r.URL.Path, "status", e.Status, "err", err)
	}
	if e.Status == http.StatusServiceUnavailable && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", unavailableRetryAfter(err))
	}
	var body []byte
	if e.Fields != nil {
		body = wire.AppendErrors(nil, f, e.Fields)
	} else {
		body = wire.AppendError(nil, f, e.Message)
	}
	h := w.Header()
	h.Set("Content-Type", f.ContentType())
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "private, no-store")
	w.WriteHeader(e.Status)
	_, _ = w.Write(body)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// unavailableRetryAfter is the Retry-After value, in seconds, for an
// unavailable backend: from the first error in err's chain that knows when
// to retry (an open circuit breaker says when it lets a probe through),
// else retryAfterSeconds. The proxy does not know what produced it.
func unavailableRetryAfter(err error) string {
	var ra interface{ RetryAfter() time.Duration }
	if errors.As(err, &ra) {
		if d := ra.RetryAfter(); d > 0 {
			return retryAfter(d)
		}
	}
	return retryAfterSeconds
}

// criteriaLabels returns the metric labels of the fields of err's error
// list, each once, in order; nil when err is no error list. (Apart from
// the handler's adapter: errors.As's target escapes, and only a failed
// request should pay for it.)
func criteriaLabels(err error) []string {
	var errs normalize.Errors
	if !errors.As(err, &errs) {
		return nil
	}
	var out []string
	for _, fe := range errs {
		if l := normalize.ParamLabel(fe.Field); !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}
