package cache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// PanicError is the error every waiter of a flight receives when its loader
// panicked.
type PanicError struct {
	// Value is what the loader passed to panic.
	Value any
	// Stack is the loader goroutine's stack at the panic.
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("cache: loader panic: %v", e.Value) }

// errNilEntry is returned when a loader returns neither an entry nor an error.
var errNilEntry = errors.New("cache: loader returned a nil entry and no error")

type refreshKey struct {
	hash, gen uint64
}

type fillResult struct {
	entry  *Entry
	cached bool // found by the flight's re-check or in the second tier, no loader call
	// source is where entry came from: this process, the second tier's
	// entry, or another process's fill.
	source Source
	// stale: entry is the second tier's, past TTL but within
	// StaleWhileRevalidate; the Gets answer Stale and start a refresh.
	stale bool
	// fallback is the second tier's entry within StaleIfError (or
	// soft-purged), served if the flight fails and the Get has no stale
	// entry of its own.
	fallback *Entry
	// leader is the span context of the flight's cache.fill span, for the
	// waiters' links. A flight returns its result with its error too.
	leader trace.SpanContext
}

// fill waits for the key's flight, starting it if needed. stale, when not
// nil, is served if the flight fails.
func (s *Store) fill(ctx context.Context, h uint64, k Key, gen uint64, p Policy, load Loader, stale *item) (*Entry, Outcome, Source, error) {
	if err := ctx.Err(); err != nil {
		return s.failed(k, stale, FromFirst, err)
	}
	var w *waiter
	if s.tracer != nil {
		w = &waiter{start: time.Now()}
	}
	ch := s.group.DoChan(flightKey('f', gen, k), s.flight(ctx, h, k, gen, p, load, true, w, nil))
	s.st.joins.Add(1) // after DoChan: the call is registered with the flight
	select {
	case r := <-ch:
		res, _ := r.Val.(*fillResult)
		if w != nil {
			s.traceWait(ctx, w, k, res, r.Err)
		}
		if r.Err != nil {
			from := FromFirst
			if stale == nil && res != nil && res.fallback != nil {
				stale, from = &item{entry: res.fallback}, FromSecond
			}
			return s.failed(k, stale, from, r.Err)
		}
		o := Miss
		switch {
		case res.stale:
			o = Stale
			s.refresh(ctx, h, k, gen, p, load, nil)
		case res.cached && res.entry.Negative:
			o = Negative
		case res.cached:
			o = Hit
		}
		s.st.outcomes[o].Add(1)
		return res.entry, o, res.source, nil
	case <-ctx.Done():
		if w != nil {
			s.traceWait(ctx, w, k, nil, ctx.Err())
		}
		return s.failed(k, stale, FromFirst, ctx.Err())
	}
}

// waiter is a traced Get's part in a flight: when it joined, and whether its
// own function ran (it led the flight).
type waiter struct {
	start time.Time
	led   atomic.Bool
}

// traceWait records a cache.wait span for a Get that joined a flight another
// Get leads, linked to the leader's cache.fill span. The leader's own work
// is already in that span, so a leader records nothing here.
func (s *Store) traceWait(ctx context.Context, w *waiter, k Key, res *fillResult, err error) {
	if w.led.Load() {
		return
	}
	opts := []trace.SpanStartOption{
		trace.WithTimestamp(w.start),
		trace.WithAttributes(attrTenant.String(k.Tenant), attrResource.String(k.Resource)),
	}
	if res != nil && res.leader.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: res.leader}))
	}
	_, span := s.tracer.Start(ctx, "cache.wait", opts...)
	if err != nil {
		span.SetStatus(codes.Error, "fill failed or caller gave up")
	}
	span.End()
}

// Span attributes set by the cache: which tenant and resource a flight is
// for (never the rest of the key, which holds the caller's criteria).
const (
	attrTenant   = attribute.Key("listingproxy.tenant")
	attrResource = attribute.Key("listingproxy.resource")
	attrRefresh  = attribute.Key("listingproxy.cache.refresh")
	attrCached   = attribute.Key("listingproxy.cache.recheck_hit")
)

// failed serves stale if there is one (from where it came from), else
// reports err.
func (s *Store) failed(k Key, stale *item, from Source, err error) (*Entry, Outcome, Source, error) {
	if stale != nil {
		s.st.outcomes[StaleIfError].Add(1)
		s.log.Debug("cache: serving stale after failed fill",
			"tenant", k.Tenant, "resource", k.Resource, "err", err)
		return stale.entry, StaleIfError, from, nil
	}
	s.st.errors.Add(1)
	return nil, Miss, FromFirst, wrapErr(k, err)
}

func wrapErr(k Key, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("cache: fill %s %s: %w", k.Tenant, k.Resource, err)
}

// flight returns the function a flight runs: re-check, load on a detached
// context, store, all in a cache.fill span when tracing. fromGet says
// whether a Get (rather than a background refresh) starts it, for
// Stats.Waiters; w, when not nil, is that Get's traced part.
//
// older, for a refresh ahead of expiry, is the entry being replaced: it
// (or an entry no newer, here or in the second tier) is no answer to the
// flight, though still fresh.
func (s *Store) flight(ctx context.Context, h uint64, k Key, gen uint64, p Policy, load Loader, fromGet bool, w *waiter, older *Entry) func() (any, error) {
	return func() (_ any, err error) {
		s.bg.add()
		defer s.bg.done()
		if fromGet {
			s.st.getFlights.Add(1)
		}
		res := &fillResult{}
		if s.tracer != nil {
			if w != nil {
				w.led.Store(true)
			}
			var span trace.Span
			ctx, span = s.tracer.Start(ctx, "cache.fill", trace.WithAttributes(
				attrTenant.String(k.Tenant), attrResource.String(k.Resource), attrRefresh.Bool(!fromGet)))
			res.leader = span.SpanContext()
			defer func() {
				span.SetAttributes(attrCached.Bool(res.cached))
				if err != nil {
					span.SetStatus(codes.Error, "fill failed")
				}
				span.End()
			}()
		}
		if it := s.lookupCurrent(h, k, gen); it != nil && p.fresh(it.entry, s.now()) && newer(it.entry, older) {
			res.entry, res.cached = it.entry, true
			return res, nil
		}
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.fillTimeout(p))
		defer cancel()
		if s.fromTier(tctx, h, k, p, fromGet, res, older) {
			return res, nil
		}
		if e, tg, err := s.tier.Claim(tctx, k); err != nil {
			return res, err
		} else if e != nil && s.usable(k, tg, e) == markNone {
			s.st.peerFills.Add(1)
			if s.adopt != nil {
				s.adopt(e)
			}
			s.store(h, k, tg, e, p)
			res.entry, res.source = e, FromPeer
			return res, nil
		}
		e, err := s.load(ctx, p, load)
		if err != nil {
			s.tier.Abandon(tctx, k, err)
			return res, err
		}
		if !s.purgedDuring(k, gen, e) && !s.purgedSince(tctx, k, e.Tags, gen) {
			s.store(h, k, gen, e, p)
			if ttl := p.lifetime(e) - s.now().Sub(e.StoredAt); ttl > 0 {
				s.tier.Set(tctx, k, gen, e, ttl)
			} else {
				s.tier.Abandon(tctx, k, nil)
			}
		} else {
			s.st.purgedFills.Add(1)
			s.tier.Abandon(tctx, k, nil)
		}
		res.entry = e
		return res, nil
	}
}

// fromTier looks k up in the second tier. An entry still of use goes into
// the first tier with its generation; fromTier reports true when it
// answers the flight (fresh, or within StaleWhileRevalidate for a Get),
// and otherwise leaves a stale-if-error candidate in res.fallback.
func (s *Store) fromTier(ctx context.Context, h uint64, k Key, p Policy, fromGet bool, res *fillResult, older *Entry) bool {
	e, tg, err := s.tier.Get(ctx, k)
	if err != nil || e == nil || !newer(e, older) {
		return false
	}
	now := s.now()
	age := now.Sub(e.StoredAt)
	mark := s.usable(k, tg, e)
	if mark == markHard || age >= p.lifetime(e) {
		return false
	}
	if s.adopt != nil {
		s.adopt(e)
	}
	s.store(h, k, tg, e, p)
	current := mark == markNone
	switch {
	case current && p.fresh(e, now):
		res.entry, res.cached = e, true
	case current && fromGet && !e.Negative && age < p.TTL+p.StaleWhileRevalidate:
		res.entry, res.cached, res.stale = e, true, true
	default:
		if p.servableOnError(e, age) {
			res.fallback = e
		}
		return false
	}
	s.st.tierHits.Add(1)
	res.source = FromSecond
	return true
}

// usable says what the purges applied here do to e, an entry of k filled
// at generation gen elsewhere (the second tier, another process's fill):
// markNone (current), markSoft (a stale-if-error candidate) or markHard.
func (s *Store) usable(k Key, gen uint64, e *Entry) uint32 {
	g := s.genOf(k)
	switch {
	case gen < g.hard:
		return markHard
	case gen >= g.fine:
		if gen < g.fill {
			return markSoft
		}
		return markNone
	}
	mark := s.tags.covered(k.Tenant, e.Tags, gen)
	if mark == markNone && gen < g.fill {
		mark = markSoft
	}
	return mark
}

// purgedDuring reports whether a purge applied here since a fill of k
// began at generation gen covers its entry e: one of k's tenant,
// resource or everything, or one by a tag that e carries.
func (s *Store) purgedDuring(k Key, gen uint64, e *Entry) bool {
	g := s.genOf(k)
	return g.fill > gen || g.fine > gen && s.tags.covered(k.Tenant, e.Tags, gen) != markNone
}

// purgedSince reports whether Generations knows of a purge covering k (or
// a body of its tenant carrying one of tags) after gen that has not been
// applied here yet. When it cannot tell, the fill is kept: the purge will
// arrive and supersede it.
func (s *Store) purgedSince(ctx context.Context, k Key, tags []Tag, gen uint64) bool {
	cov, err := s.generations.Covering(ctx, k, tags)
	return err == nil && cov > gen
}

// fillTimeout bounds one fill under p.
func (s *Store) fillTimeout(p Policy) time.Duration {
	if p.FillTimeout > 0 {
		return p.FillTimeout
	}
	return s.fillLimit
}

// load runs the loader once on a context detached from ctx's cancellation,
// turning a panic into a *PanicError.
func (s *Store) load(ctx context.Context, p Policy, load Loader) (e *Entry, err error) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.fillTimeout(p))
	defer cancel()
	s.st.loaderCalls.Add(1)
	defer func() {
		if v := recover(); v != nil {
			s.st.panics.Add(1)
			pe := &PanicError{Value: v, Stack: debug.Stack()}
			s.log.Error("cache: loader panic", "panic", fmt.Sprint(v), "stack", string(pe.Stack))
			e, err = nil, pe
		}
	}()
	e, err = load(fctx)
	switch {
	case err != nil:
		return nil, err
	case e == nil:
		return nil, errNilEntry
	case e.StoredAt.IsZero():
		c := *e
		c.StoredAt = s.now()
		e = &c
	}
	return e, nil
}

// refreshAhead starts a refresh of k, a hot entry not expired yet, within
// the budget (Options.RefreshBudget); past it the refresh is skipped and
// counted.
func (s *Store) refreshAhead(ctx context.Context, h uint64, k Key, gen uint64, p Policy, load Loader, older *Entry) {
	if s.refreshBudget != nil && !s.refreshBudget(k) {
		s.st.refreshesSkipped.Add(1)
		return
	}
	if s.refresh(ctx, h, k, gen, p, load, older) {
		s.st.refreshesAhead.Add(1)
	}
}

// backgroundKey marks the context of a background refresh's load.
type backgroundKey struct{}

// Background reports whether ctx is the context of a background refresh's
// load (of a stale entry, or ahead of expiry): no client waits for it, so
// a backend decorator may refuse it rather than queue it behind clients'
// calls.
func Background(ctx context.Context) bool { return ctx.Value(backgroundKey{}) != nil }

// newer reports whether e may answer a refresh of older: any entry when
// older is nil, else one stored after it.
func newer(e, older *Entry) bool { return older == nil || e.StoredAt.After(older.StoredAt) }

// refresh starts one background refresh for the key unless one is running;
// it reports whether it started one. older is the fresh entry a refresh
// ahead of expiry replaces (nil for a stale entry's refresh).
func (s *Store) refresh(ctx context.Context, h uint64, k Key, gen uint64, p Policy, load Loader, older *Entry) bool {
	rk := refreshKey{h, gen}
	s.refreshMu.Lock()
	if _, running := s.refreshing[rk]; running {
		s.refreshMu.Unlock()
		return false
	}
	s.refreshing[rk] = struct{}{}
	s.refreshMu.Unlock()
	s.st.refreshes.Add(1)
	s.bg.add()
	go func() {
		defer s.bg.done()
		defer func() {
			s.refreshMu.Lock()
			delete(s.refreshing, rk)
			s.refreshMu.Unlock()
		}()
		bg := context.WithValue(ctx, backgroundKey{}, true)
		r := <-s.group.DoChan(flightKey('f', gen, k), s.flight(bg, h, k, gen, p, load, false, nil, older))
		if r.Err != nil {
			// A backend that refuses calls for a while (its error says when
			// to retry, e.g. an open breaker) is already reported where it
			// decided to refuse: one debug line per key is enough.
			lvl := slog.LevelWarn
			var refusing interface{ RetryAfter() time.Duration }
			if errors.As(r.Err, &refusing) {
				lvl = slog.LevelDebug
			}
			s.log.Log(context.WithoutCancel(ctx), lvl, "cache: background refresh failed",
				"tenant", k.Tenant, "resource", k.Resource, "err", r.Err)
		}
	}()
	return true
}

// bypass loads without the cache, still coalescing identical calls.
func (s *Store) bypass(ctx context.Context, k Key, p Policy, load Loader) (*Entry, Outcome, error) {
	s.st.outcomes[Bypass].Add(1)
	if err := ctx.Err(); err != nil {
		s.st.errors.Add(1)
		return nil, Bypass, err
	}
	ch := s.group.DoChan(flightKey('b', s.genOf(k).flight(), k), func() (any, error) {
		s.bg.add()
		defer s.bg.done()
		s.st.getFlights.Add(1)
		e, err := s.load(ctx, p, load)
		if err != nil {
			return nil, err
		}
		return &fillResult{entry: e}, nil
	})
	s.st.joins.Add(1)
	select {
	case r := <-ch:
		if r.Err != nil {
			s.st.errors.Add(1)
			return nil, Bypass, wrapErr(k, r.Err)
		}
		return r.Val.(*fillResult).entry, Bypass, nil
	case <-ctx.Done():
		s.st.errors.Add(1)
		return nil, Bypass, ctx.Err()
	}
}

// flightKey names a flight: kind, generation and the whole key, each field
// length-prefixed so that no two keys share a flight.
func flightKey(kind byte, gen uint64, k Key) string {
	b := make([]byte, 0, 50+len(k.Tenant)+len(k.Resource)+len(k.Scope)+len(k.Variant))
	b = append(b, kind)
	b = strconv.AppendUint(b, gen, 10)
	for _, f := range [...]string{k.Tenant, k.Resource, k.Scope, k.Variant} {
		b = append(b, '|')
		b = strconv.AppendInt(b, int64(len(f)), 10)
		b = append(b, ':')
		b = append(b, f...)
	}
	return string(b)
}

// tracker counts work in progress; unlike sync.WaitGroup it allows add
// while another goroutine waits.
type tracker struct {
	mu   sync.Mutex
	n    int
	cond *sync.Cond
}

func (t *tracker) add() {
	t.mu.Lock()
	t.n++
	t.mu.Unlock()
}

func (t *tracker) done() {
	t.mu.Lock()
	t.n--
	if t.n == 0 && t.cond != nil {
		t.cond.Broadcast()
	}
	t.mu.Unlock()
}

func (t *tracker) wait() {
	t.mu.Lock()
	if t.cond == nil {
		t.cond = sync.NewCond(&t.mu)
	}
	for t.n > 0 {
		t.cond.Wait()
	}
	t.mu.Unlock()
}
