// Package proxy owns listingproxy's HTTP surface: the routes of the listing
// API, HTTP Basic authentication, criteria errors and permissions, the cache
// lookup around each backend call, rendering (through proxy/render), and the
// one table that maps errors to HTTP statuses and the spec's error bodies.
//
// It never imports database/sql or config: backends arrive as
// upstream.Backend values, settings as constructor arguments.
package proxy

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"listingproxy/cache"
	"listingproxy/normalize"
	"listingproxy/proxy/render"
	"listingproxy/upstream"
)

// Tenant is a client/agency: its users see only what its backend returns for
// its scope.
type Tenant struct {
	Name        string           // the tenant's name in listingproxy (cache key, logs)
	Backend     upstream.Backend // where its data lives
	BackendName string           // for breakers, logs and metrics
	Upstream    string           // the tenant's identity at the backend (Scope.Tenant)
}

// Options are the optional knobs of a Server. The zero value works: no cache,
// no breaker, countries au and nz, 1000 results at most.
type Options struct {
	// Countries maps each served country segment to its time zone. Default:
	// au (Australia/Sydney) and nz (Pacific/Auckland).
	Countries map[string]*time.Location
	// MaxResults is the limit of a list without one and the cap on a given
	// limit. Default 1000.
	MaxResults int
	// Cache stores rendered bodies. Nil: every request calls the backend.
	Cache *cache.Store
	// Policy returns the freshness policy of a resource ("properties",
	// "property", "agents", "agent"). Default: 60s TTL, 5m
	// stale-while-revalidate, 1h stale-if-error, 10s negative, 10s fill.
	Policy func(resource string) cache.Policy
	// Breakers holds a circuit breaker per backend name. A backend without
	// one is called directly.
	Breakers map[string]*cache.Breaker
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Logger receives errors and access lines. Default: discard.
	Logger *slog.Logger
}

// Server is the listing API as an http.Handler.
type Server struct {
	auth      *authenticator
	countries map[string]*time.Location
	norm      normalize.Options
	cache     *cache.Store
	policy    func(string) cache.Policy
	breakers  map[string]*cache.Breaker
	now       func() time.Time
	log       *slog.Logger
	mux       *http.ServeMux
	memo      criteriaMemo
}

// New returns the listing API for the given users and tenants.
func New(users []User, tenants []Tenant, o Options) (*Server, error) {
	tm := make(map[string]*Tenant, len(tenants))
	for i := range tenants {
		t := tenants[i]
		if t.Backend == nil {
			return nil, errors.New("proxy: tenant " + t.Name + " has no backend")
		}
		tm[t.Name] = &t
	}
	for _, u := range users {
		if tm[u.Tenant] == nil {
			return nil, errors.New("proxy: user " + u.Username + " has unknown tenant " + u.Tenant)
		}
	}
	s := &Server{
		auth:      newAuthenticator(users, tm),
		countries: o.Countries,
		norm:      normalize.Options{MaxResults: cmp.Or(o.MaxResults, 1000)},
		cache:     o.Cache,
		policy:    o.Policy,
		breakers:  o.Breakers,
		now:       o.Now,
		log:       o.Logger,
	}
	if s.countries == nil {
		s.countries = map[string]*time.Location{"au": mustZone("Australia/Sydney"), "nz": mustZone("Pacific/Auckland")}
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.policy == nil {
		s.policy = func(string) cache.Policy { return DefaultPolicy }
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.mux = http.NewServeMux()
	s.routes()
	return s, nil
}

// DefaultPolicy is the freshness policy when Options.Policy is nil.
var DefaultPolicy = cache.Policy{
	TTL:                  60 * time.Second,
	StaleWhileRevalidate: 5 * time.Minute,
	StaleIfError:         time.Hour,
	NegativeTTL:          10 * time.Second,
	FillTimeout:          10 * time.Second,
}

func mustZone(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic("proxy: time zone " + name + ": " + err.Error() + " (import time/tzdata)")
	}
	return loc
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// request is what every API handler receives: the authenticated caller and
// the parsed path.
type request struct {
	*http.Request
	who     *principal
	country string
	loc     *time.Location
	format  render.Format
}

// apiHandler is an API endpoint: it returns an error instead of writing one.
type apiHandler func(w http.ResponseWriter, r *request) error

// api adapts an apiHandler to http.Handler: it authenticates, checks the
// country, runs the handler and maps any error through classify.
func (s *Server) api(format render.Format, h apiHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rq := &request{Request: r, format: format}
		rq.who = s.auth.authenticate(r)
		var err error
		switch {
		case rq.who == nil:
			w.Header().Set("WWW-Authenticate", `Basic realm="listings", charset="UTF-8"`)
			err = &Error{Status: http.StatusUnauthorized, Message: msgUnauthorized}
		default:
			rq.country = r.PathValue("country")
			rq.loc = s.countries[rq.country]
			if rq.loc == nil {
				err = &Error{Status: http.StatusNotFound, Message: "Unknown country " + strconv.Quote(truncate(rq.country, 16))}
			} else {
				err = h(w, rq)
			}
		}
		if err != nil {
			if rq.who != nil && classify(err).Status == http.StatusServiceUnavailable {
				if b := s.breakers[rq.who.tenant.BackendName]; b != nil && b.RetryAfter() > 0 {
					w.Header().Set("Retry-After", strconv.Itoa(int(b.RetryAfter().Seconds())))
				}
			}
			s.writeError(w, r, format, err)
		}
	})
}

// writeError writes err as the spec's error body in the requested format.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, f render.Format, err error) {
	e := classify(err)
	switch {
	case e.Status == 499:
		s.log.DebugContext(r.Context(), "client went away", "path", r.URL.Path, "err", e.Err)
		return
	case e.Status >= 500:
		s.log.ErrorContext(r.Context(), "request failed", "path", r.URL.Path, "status", e.Status, "err", err)
	}
	if e.Status == http.StatusServiceUnavailable && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", retryAfterSeconds)
	}
	var body []byte
	if e.Fields != nil {
		body = render.AppendErrors(nil, f, e.Fields)
	} else {
		body = render.AppendError(nil, f, e.Message)
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

// call runs fn against the tenant's backend through its breaker, if any.
func (s *Server) call(ctx context.Context, t *Tenant, fn func(context.Context) error) error {
	b := s.breakers[t.BackendName]
	if b == nil {
		return fn(ctx)
	}
	return b.Do(ctx, fn)
}
