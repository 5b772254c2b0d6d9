package breaker

import (
	"context"
	"database/sql/driver"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sony/gobreaker/v2"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"listingproxy/upstream"
)

// ErrOpen is matched (errors.Is) by every error a breaker returns without
// calling the backend: it is open, or half-open with all its probes in
// flight.
var ErrOpen = errors.New("circuit breaker open")

// OpenError is the error of a call the breakers refused.
type OpenError struct {
	Backend string
	// Tenant is the tenant whose breaker is open, or "" when the
	// backend-wide breaker is.
	Tenant string
	// After is how long until the breaker lets a probe through.
	After time.Duration
}

func (e *OpenError) Error() string {
	return "breaker " + scopeName(e.Backend, e.Tenant) + ": " + ErrOpen.Error()
}

// Is reports target == ErrOpen.
func (e *OpenError) Is(target error) bool { return target == ErrOpen }

// RetryAfter is how long until the breaker lets a probe through, at least
// one second (a Retry-After header's unit).
func (e *OpenError) RetryAfter() time.Duration { return e.After }

func scopeName(backend, tenant string) string {
	if tenant == "" {
		return backend
	}
	return backend + "/" + tenant
}

// State is a breaker's state.
type State uint8

// Breaker states.
const (
	StateClosed State = iota
	StateHalfOpen
	StateOpen
)

// String returns "closed", "half-open" or "open".
func (s State) String() string {
	switch s {
	case StateClosed:
		return "closed"
	case StateHalfOpen:
		return "half-open"
	case StateOpen:
		return "open"
	}
	return "unknown"
}

// AllStates lists every State, for metrics exported at zero.
var AllStates = [...]State{StateClosed, StateHalfOpen, StateOpen}

func fromGobreaker(s gobreaker.State) State {
	switch s {
	case gobreaker.StateHalfOpen:
		return StateHalfOpen
	case gobreaker.StateOpen:
		return StateOpen
	}
	return StateClosed
}

// Defaults of the zero fields of Settings. They are the only statement of
// these defaults: configuration leaves a key out to get them.
const (
	DefaultConsecutiveFailures = 5
	DefaultMinRequests         = 20
	DefaultWindow              = 10 * time.Second
	DefaultOpenFor             = 15 * time.Second
	DefaultHalfOpenProbes      = 3
	DefaultTenantShare         = 0.5
	DefaultQueueTimeout        = 500 * time.Millisecond
)

// Settings configure every breaker and bulkhead of a Registry. The zero
// value is usable.
type Settings struct {
	// ConsecutiveFailures trips a breaker after that many counted failures
	// in a row. Default DefaultConsecutiveFailures (5).
	ConsecutiveFailures uint32
	// FailureRatio, when positive, also trips a breaker once failures make
	// up at least this share of the counted calls in the window, provided
	// there were at least MinRequests of them.
	FailureRatio float64
	// MinRequests is the fewest counted calls in the window before
	// FailureRatio applies. Default DefaultMinRequests (20).
	MinRequests uint32
	// Window is the rolling window over which closed-state counts are kept,
	// in ten buckets, and over which failing tenants are remembered for
	// the backend breaker. Default DefaultWindow (10s).
	Window time.Duration
	// OpenFor is how long a breaker stays open before it lets probes
	// through (half-open). Default DefaultOpenFor (15s).
	OpenFor time.Duration
	// HalfOpenProbes is how many calls a half-open breaker lets through;
	// that many successes in a row close it, one failure opens it again.
	// Default DefaultHalfOpenProbes (3).
	HalfOpenProbes uint32
	// TenantShare is the share of a backend's concurrency each tenant
	// keeps under contention: max(1, floor(limit × TenantShare)) calls, of
	// the limit in force (an adaptive limit's current value). A tenant
	// below its share takes any free slot; beyond it, under an adaptive
	// limit, a tenant borrows only while no tenant below its share waits,
	// and never the last eighth of the limit (at least one slot), which
	// stays free for a tenant arriving; under a fixed limit (a SQL pool)
	// it keeps to its share. Default DefaultTenantShare (0.5).
	TenantShare float64
	// QueueTimeout is the longest a call waits for a concurrency slot;
	// then it fails with a *BusyError (upstream.ErrBusy, counted by no
	// breaker), which the cache answers with a stale copy or a fast 503.
	// Default DefaultQueueTimeout (500ms).
	QueueTimeout time.Duration
}

// WithDefaults returns s with its zero fields set to the defaults.
func (s Settings) WithDefaults() Settings {
	if s.ConsecutiveFailures == 0 {
		s.ConsecutiveFailures = DefaultConsecutiveFailures
	}
	if s.MinRequests == 0 {
		s.MinRequests = DefaultMinRequests
	}
	if s.Window <= 0 {
		s.Window = DefaultWindow
	}
	if s.OpenFor <= 0 {
		s.OpenFor = DefaultOpenFor
	}
	if s.HalfOpenProbes == 0 {
		s.HalfOpenProbes = DefaultHalfOpenProbes
	}
	if s.TenantShare <= 0 {
		s.TenantShare = DefaultTenantShare
	}
	s.TenantShare = min(s.TenantShare, 1)
	if s.QueueTimeout <= 0 {
		s.QueueTimeout = DefaultQueueTimeout
	}
	return s
}

// Options configure a Registry. The zero value is usable.
type Options struct {
	// Settings of every breaker. See Settings for the defaults.
	Settings Settings
	// Now is the clock of Retry-After, of the failing-tenant window and of
	// Status times. Default time.Now. (gobreaker keeps its own clock for
	// its windows and open period.)
	Now func() time.Time
	// OnStateChange is called on every state change of a breaker (tenant
	// "" for the backend-wide one), with that breaker's lock held: it must
	// not call the Registry's methods. Default: nothing.
	OnStateChange func(backend, tenant string, from, to State)
	// TracerProvider makes a "breaker" span around each call, recording
	// the breakers' decision. Nil: no spans.
	TracerProvider trace.TracerProvider
}

// Backend names a backend to Wrap.
type Backend struct {
	// Name is the backend's name (metrics, logs, errors).
	Name string
	// Limit is the backend's own concurrency (SQL pool size, CRM
	// max_concurrency): the most calls in flight at once, each tenant
	// holding at most its share. 0: no bound.
	Limit int
	// Adaptive makes Limit a ceiling: the limit in force starts at
	// InitialConcurrency and follows the backend's latency (see limiter),
	// never below MinConcurrency. Otherwise the limit is Limit.
	Adaptive bool
	// Tenants are the tenants (Scope.Tenant) known up front, so that
	// Registry.States lists them before their first call. Others get
	// their breaker at their first call.
	Tenants []string
}

// Registry holds the breakers and bulkheads of every wrapped backend. It is
// safe for concurrent use.
type Registry struct {
	now      func() time.Time
	onChange func(backend, tenant string, from, to State)
	tracer   trace.Tracer // nil: no spans

	mu       sync.Mutex // guards settings writes and guards
	settings atomic.Pointer[Settings]
	guards   map[string]*guard
}

// NewRegistry returns an empty Registry.
func NewRegistry(o Options) *Registry {
	r := &Registry{now: o.Now, onChange: o.OnStateChange, guards: map[string]*guard{}}
	if r.now == nil {
		r.now = time.Now
	}
	if o.TracerProvider != nil {
		r.tracer = o.TracerProvider.Tracer("listingproxy/breaker")
	}
	s := o.Settings.WithDefaults()
	r.settings.Store(&s)
	return r
}

// Wrap returns b behind the breakers and bulkheads of backend be. Wrapping
// again under the same name shares them (the first Limit stays).
func (r *Registry) Wrap(b upstream.Backend, be Backend) upstream.Backend {
	r.mu.Lock()
	g := r.guards[be.Name]
	if g == nil {
		g = &guard{r: r, name: be.Name}
		if be.Limit > 0 {
			g.lim = newLimiter(be.Name, be.Limit, be.Adaptive)
		}
		g.gen.Store(g.newGeneration(*r.settings.Load(), nil))
		r.guards[be.Name] = g
	}
	r.mu.Unlock()
	gen := g.gen.Load()
	for _, t := range be.Tenants {
		gen.tenant(t)
	}
	return upstream.Wrap(b, g.around)
}

// Settings returns the settings in force, defaults applied.
func (r *Registry) Settings() Settings { return *r.settings.Load() }

// Reload applies s (defaults applied) to every breaker and bulkhead. When
// the settings are unchanged it does nothing, so open breakers stay open;
// otherwise every breaker is replaced by a closed one with the new
// settings (a call in flight finishes under the old ones). Histories
// (last error, last success) are kept. It reports whether anything changed.
func (r *Registry) Reload(s Settings) bool {
	s = s.WithDefaults()
	r.mu.Lock()
	defer r.mu.Unlock()
	if *r.settings.Load() == s {
		return false
	}
	r.settings.Store(&s)
	for _, g := range r.guards {
		g.gen.Store(g.newGeneration(s, g.gen.Load()))
	}
	return true
}

// Status is one breaker's state, for admin endpoints, readiness and
// metrics.
type Status struct {
	Backend string
	// Tenant is the tenant (Scope.Tenant) of a tenant breaker, "" for the
	// backend-wide breaker.
	Tenant string
	State  State
	// RetryAfter is how long until an open breaker lets a probe through;
	// zero unless open.
	RetryAfter time.Duration
	// LastError is the message of the latest failure counted against this
	// breaker, at most 256 bytes; "" when none. It may quote a backend's
	// message: operators only.
	LastError string
	// LastFailure and LastSuccess are the times of the latest counted
	// failure and success; zero when none.
	LastFailure time.Time
	LastSuccess time.Time
	// InFlight is how many of the tenant's calls hold a concurrency slot,
	// of Slots, its share of the backend's current limit (0: no bound).
	// Zero on backend rows (see Registry.Limits).
	InFlight int
	Slots    int
}

// States lists every breaker: by backend name, the backend-wide breaker
// (Tenant "") first, then its tenants by name.
func (r *Registry) States() []Status {
	r.mu.Lock()
	guards := make([]*guard, 0, len(r.guards))
	for _, g := range r.guards {
		guards = append(guards, g)
	}
	r.mu.Unlock()
	slices.SortFunc(guards, func(a, b *guard) int { return strings.Compare(a.name, b.name) })
	now := r.now()
	var out []Status
	for _, g := range guards {
		gen := g.gen.Load()
		out = append(out, gen.backend.status(now, gen.settings))
		gen.mu.Lock()
		cells := make([]*cell, 0, len(gen.tenants))
		for _, c := range gen.tenants {
			cells = append(cells, c)
		}
		gen.mu.Unlock()
		slices.SortFunc(cells, func(a, b *cell) int { return strings.Compare(a.tenant, b.tenant) })
		for _, c := range cells {
			st := c.status(now, gen.settings)
			if g.lim != nil {
				st.InFlight, st.Slots = g.lim.tenantStatus(c.tenant, gen.settings)
			}
			out = append(out, st)
		}
	}
	return out
}

// Limits lists each bounded backend's concurrency limiter, by name.
func (r *Registry) Limits() []LimitStatus {
	r.mu.Lock()
	guards := make([]*guard, 0, len(r.guards))
	for _, g := range r.guards {
		if g.lim != nil {
			guards = append(guards, g)
		}
	}
	r.mu.Unlock()
	slices.SortFunc(guards, func(a, b *guard) int { return strings.Compare(a.name, b.name) })
	out := make([]LimitStatus, len(guards))
	for i, g := range guards {
		out[i] = g.lim.status(g.name)
	}
	return out
}

// guard is one backend's breakers and concurrency limiter.
type guard struct {
	r    *Registry
	name string
	lim  *limiter                   // nil: unbounded; outlives Reload
	gen  atomic.Pointer[generation] // replaced by Reload
}

// generation is a guard's breakers under one Settings.
type generation struct {
	g        *guard
	settings Settings
	backend  *cell

	mu      sync.Mutex
	tenants map[string]*cell
	failing map[string]time.Time // tenants whose latest outcome was a failure of their own, when
}

// cell is one breaker.
type cell struct {
	backend  string
	tenant   string
	cb       *gobreaker.TwoStepCircuitBreaker[struct{}]
	openedAt atomic.Int64 // unix nanos (Options.Now) of the latest open
	hist     *history
}

// history outlives a Reload.
type history struct {
	lastErr     atomic.Pointer[string]
	lastFailure atomic.Int64 // unix nanos; 0: never
	lastSuccess atomic.Int64
}

func (g *guard) newGeneration(s Settings, old *generation) *generation {
	gen := &generation{g: g, settings: s, tenants: map[string]*cell{}, failing: map[string]time.Time{}}
	var oldBackend *history
	if old != nil {
		oldBackend = old.backend.hist
	}
	gen.backend = gen.newCell("", oldBackend)
	if old != nil {
		old.mu.Lock()
		for t, c := range old.tenants {
			gen.tenants[t] = gen.newCell(t, c.hist)
		}
		old.mu.Unlock()
	}
	return gen
}

// tenant returns the tenant's cell, making it at its first call.
func (gen *generation) tenant(t string) *cell {
	gen.mu.Lock()
	defer gen.mu.Unlock()
	c := gen.tenants[t]
	if c == nil {
		c = gen.newCell(t, nil)
		gen.tenants[t] = c
	}
	return c
}

// outcome markers passed to gobreaker's done: nil is a success.
var (
	errMarkFailure  = errors.New("failure")
	errMarkExcluded = errors.New("excluded")
)

func (gen *generation) newCell(tenant string, h *history) *cell {
	if h == nil {
		h = &history{}
	}
	c := &cell{backend: gen.g.name, tenant: tenant, hist: h}
	s, r, backend := gen.settings, gen.g.r, gen.g.name
	c.cb = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:         scopeName(backend, tenant),
		MaxRequests:  s.HalfOpenProbes,
		Interval:     s.Window,
		BucketPeriod: max(s.Window/10, time.Millisecond),
		Timeout:      s.OpenFor,
		ReadyToTrip: func(n gobreaker.Counts) bool {
			if n.ConsecutiveFailures >= s.ConsecutiveFailures {
				return true
			}
			counted := n.TotalSuccesses + n.TotalFailures
			return s.FailureRatio > 0 && counted >= s.MinRequests && float64(n.TotalFailures) >= s.FailureRatio*float64(counted)
		},
		IsSuccessful: func(err error) bool { return err == nil },
		IsExcluded:   func(err error) bool { return err == errMarkExcluded },
		OnStateChange: func(_ string, from, to gobreaker.State) {
			if to == gobreaker.StateOpen {
				c.openedAt.Store(r.now().UnixNano())
			}
			if r.onChange != nil {
				r.onChange(backend, tenant, fromGobreaker(from), fromGobreaker(to))
			}
		},
	})
	return c
}

func (c *cell) retryAfter(now time.Time, s Settings) time.Duration {
	left := s.OpenFor - now.Sub(time.Unix(0, c.openedAt.Load()))
	return max(ceilSecond(left), time.Second)
}

func ceilSecond(d time.Duration) time.Duration {
	return (d + time.Second - 1).Truncate(time.Second)
}

func (c *cell) status(now time.Time, s Settings) Status {
	st := Status{Backend: c.backend, Tenant: c.tenant, State: fromGobreaker(c.cb.State())}
	if st.State == StateOpen {
		st.RetryAfter = c.retryAfter(now, s)
	}
	if p := c.hist.lastErr.Load(); p != nil {
		st.LastError = *p
	}
	st.LastFailure = unixTime(c.hist.lastFailure.Load())
	st.LastSuccess = unixTime(c.hist.lastSuccess.Load())
	return st
}

func unixTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

func (c *cell) refused(backend string, err error, now time.Time, s Settings) *OpenError {
	after := time.Second // half-open with every probe in flight
	if errors.Is(err, gobreaker.ErrOpenState) {
		after = c.retryAfter(now, s)
	}
	return &OpenError{Backend: backend, Tenant: c.tenant, After: after}
}

// Span attributes of the breaker span.
const (
	attrBackend  = attribute.Key("listingproxy.backend")
	attrTenant   = attribute.Key("listingproxy.upstream_tenant")
	attrDecision = attribute.Key("listingproxy.breaker.decision")
	attrState    = attribute.Key("listingproxy.breaker.state")
	attrOpen     = attribute.Key("listingproxy.breaker.open")
)

// around is the decorator: both breakers, then a concurrency slot, then
// the call, whose outcome is classified for each breaker and whose latency
// feeds the limiter.
func (g *guard) around(ctx context.Context, call upstream.Call, next func(context.Context) error) error {
	if g.r.tracer == nil {
		return g.guarded(ctx, call, next, nil)
	}
	ctx, span := g.r.tracer.Start(ctx, "breaker", trace.WithAttributes(
		attrBackend.String(g.name), attrTenant.String(call.Scope.Tenant)))
	defer span.End()
	return g.guarded(ctx, call, next, span)
}

func (g *guard) guarded(ctx context.Context, call upstream.Call, next func(context.Context) error, span trace.Span) error {
	gen := g.gen.Load()
	tc := gen.tenant(call.Scope.Tenant)
	if span != nil {
		span.SetAttributes(attrState.String(fromGobreaker(tc.cb.State()).String()))
	}
	doneB, err := gen.backend.cb.Allow()
	if err != nil {
		return reject(span, gen.backend.refused(g.name, err, g.r.now(), gen.settings))
	}
	doneT, err := tc.cb.Allow()
	if err != nil {
		doneB(errMarkExcluded)
		return reject(span, tc.refused(g.name, err, g.r.now(), gen.settings))
	}
	// A wait for a slot, and a wait that ends without one, are not the
	// backend's doing: both breakers leave such a call uncounted.
	var started time.Time
	if g.lim != nil {
		if started, err = g.lim.acquire(ctx, tc.tenant, gen.settings, g.r.now); err != nil {
			doneT(errMarkExcluded)
			doneB(errMarkExcluded)
			if span != nil {
				span.SetAttributes(attrDecision.String("busy"))
			}
			return err
		}
	}
	sampled := noSample
	release := func(now time.Time) {
		if g.lim != nil {
			g.lim.release(tc.tenant, started, now, sampled, gen.settings)
		}
	}
	if err := ctx.Err(); err != nil { // the caller is gone: nothing to learn
		release(time.Time{})
		doneT(errMarkExcluded)
		doneB(errMarkExcluded)
		return err
	}
	if span != nil {
		span.SetAttributes(attrDecision.String("allowed"))
	}
	finished := false
	defer func() {
		if !finished { // next panicked: a failure for both; the panic goes on
			release(time.Time{})
			doneT(errMarkFailure)
			doneB(gen.backendOutcome(tc.tenant, errMarkFailure, g.r.now()))
		}
	}()
	err = next(ctx)
	finished = true
	now := g.r.now()
	mark := outcome(ctx, err)
	switch mark {
	case nil:
		sampled = answerSample
	case errMarkFailure:
		sampled = failureSample
	}
	release(now)
	tc.hist.record(mark, err, now)
	doneT(mark)
	bmark := gen.backendOutcome(tc.tenant, failureKind(mark, err), now)
	gen.backend.hist.record(bmark, err, now)
	doneB(bmark)
	if span != nil && mark == errMarkFailure {
		span.SetStatus(codes.Error, "backend failure")
	}
	return err
}

func reject(span trace.Span, e *OpenError) error {
	if span != nil {
		span.SetAttributes(attrDecision.String("rejected"), attrOpen.String(scopeName(e.Backend, e.Tenant)))
		span.SetStatus(codes.Error, "circuit breaker open")
	}
	return e
}

// outcome classifies a call's error for its tenant's breaker: nil
// (success), errMarkExcluded or errMarkFailure.
func outcome(ctx context.Context, err error) error {
	switch {
	case err == nil, upstream.IsAnswer(err):
		return nil
	case errors.Is(err, context.Canceled), errors.Is(ctx.Err(), context.Canceled),
		errors.Is(err, upstream.ErrBusy): // a local bound inside the backend was full
		return errMarkExcluded
	case errors.Is(err, upstream.ErrInternal): // listingproxy's bug: the backend answered
		return errMarkExcluded
	}
	return errMarkFailure
}

// errMarkConnection is a failure that is the backend's whatever the tenant.
var errMarkConnection = errors.New("connection failure")

func failureKind(mark, err error) error {
	if mark == errMarkFailure && connectionLevel(err) {
		return errMarkConnection
	}
	return mark
}

// connectionLevel reports errors that happen before any query runs, so no
// tenant's query can have caused them: a refused or unreachable dial, a
// failed name lookup, a pooled connection found dead. Timeouts are not
// among them: a slow query times out too.
func connectionLevel(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" && !op.Timeout() {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) ||
		errors.Is(err, driver.ErrBadConn)
}

// backendOutcome classifies a tenant's outcome for the backend breaker: a
// success clears the failing tenants; a connection failure counts; any
// other failure counts only when another tenant failed too within the
// window, else it is excluded.
func (gen *generation) backendOutcome(tenant string, mark error, now time.Time) error {
	switch mark {
	case nil:
		gen.mu.Lock()
		clear(gen.failing)
		gen.mu.Unlock()
		return nil
	case errMarkExcluded:
		return errMarkExcluded
	case errMarkConnection:
		return errMarkFailure
	}
	gen.mu.Lock()
	defer gen.mu.Unlock()
	gen.failing[tenant] = now
	others := 0
	for t, at := range gen.failing {
		if now.Sub(at) > gen.settings.Window {
			delete(gen.failing, t)
		} else if t != tenant {
			others++
		}
	}
	if others > 0 {
		return errMarkFailure
	}
	return errMarkExcluded
}

func (h *history) record(mark, err error, now time.Time) {
	switch mark {
	case nil:
		h.lastSuccess.Store(now.UnixNano())
	case errMarkFailure, errMarkConnection:
		msg := err.Error()
		if len(msg) > 256 {
			msg = strings.ToValidUTF8(msg[:256], "")
		}
		h.lastErr.Store(&msg)
		h.lastFailure.Store(now.UnixNano())
	}
}
