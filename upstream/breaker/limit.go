package breaker

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"listingproxy/upstream"
)

// Bounds of an adaptive limit (Backend.Adaptive). The ceiling is the
// backend's own Backend.Limit.
const (
	// InitialConcurrency is an adaptive limit's value before the first
	// latency sample (or the ceiling, if lower).
	InitialConcurrency = 16
	// MinConcurrency is the floor an adaptive limit never shrinks below
	// (or the ceiling, if lower).
	MinConcurrency = 4
	// latencyTolerance: the limit grows while the recent latency is at most
	// this many times the long-term one, and shrinks beyond it.
	latencyTolerance = 2.0
	// shortWeight and longWeight are the weights of one sample in the
	// recent and the long-term latency averages (about the last 8 and the
	// last 256 calls).
	shortWeight = 1.0 / 8
	longWeight  = 1.0 / 256
)

// BusyError is the error of a call that got no concurrency slot within
// Settings.QueueTimeout. It matches upstream.ErrBusy: breakers never count
// it, and the cache serves a stale copy or a 503 whose Retry-After is
// RetryAfter.
type BusyError struct {
	Backend string
	Tenant  string
	// Limit is the backend's concurrency limit when the wait began, and
	// Slots the tenant's share of it.
	Limit, Slots int
	// Waited is how long the call waited.
	Waited time.Duration
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("breaker %s: no backend slot within %s (limit %d, tenant share %d): %v",
		scopeName(e.Backend, e.Tenant), e.Waited, e.Limit, e.Slots, upstream.ErrBusy)
}

// Is reports target == upstream.ErrBusy.
func (e *BusyError) Is(target error) bool { return target == upstream.ErrBusy }

// RetryAfter is one second: slots free up within a backend call's time.
func (e *BusyError) RetryAfter() time.Duration { return time.Second }

// Refusal reasons of LimitStatus.Refusals.
const (
	RefusedQueueTimeout = "queue_timeout" // no slot within Settings.QueueTimeout
	RefusedCanceled     = "canceled"      // the caller went away (or its deadline passed) while waiting
	RefusedBackground   = "background"    // a background call (a cache refresh) found no idle capacity
)

// LimitStatus is one backend's concurrency limiter, for metrics and admin
// endpoints.
type LimitStatus struct {
	Backend string
	// Adaptive reports a limit that follows the backend's latency; else it
	// is fixed at Ceiling.
	Adaptive bool
	// Limit is the current limit of concurrent calls, Ceiling its highest
	// value.
	Limit, Ceiling int
	// InFlight is the calls holding a slot; Waiting those waiting for one.
	InFlight, Waiting int
	// Waits counts the calls that had to wait for a slot (whether they got
	// one or not); Refusals the waits that ended without one, by reason
	// (RefusedQueueTimeout, RefusedCanceled), and the background calls
	// refused at once (RefusedBackground).
	Waits    uint64
	Refusals map[string]uint64
}

// limiter is one backend's concurrency bound: a limit of calls in flight
// (fixed, or adaptive between MinConcurrency and the ceiling), each
// tenant's share of it under contention, and a FIFO of waiting calls.
//
// A tenant below its share takes any free slot. With an adaptive limit, a
// tenant at its share may borrow more while nobody below theirs waits
// (a fixed limit, a SQL pool's, lends nothing), but never the last
// reserve slots (an eighth of the limit, at least one), so a tenant
// arriving while another has borrowed everything it could is served at
// once; every slot that frees goes first to the waiting tenants below
// their share, in order. A borrowed slot cannot be taken back before its
// call ends: that is what the reserve is for.
//
// The adaptive rule is gradient-like, after Netflix concurrency-limits'
// Gradient2: every completed call is a latency sample feeding a recent
// average (short) and a long-term one (long). While short stays within
// latencyTolerance × long the backend is keeping up, and the limit grows
// by √limit per sample, but only while it is in use (at least half of it
// held, or a call waiting), so it settles at about twice the demand; once
// short exceeds it the backend is queueing, and the limit is multiplied by
// max(0.5, tolerance × long / short), at most once per long-term latency,
// so one congestion episode shrinks it once rather than once per call.
// long follows a backend that is durably slower (in a few hundred calls)
// and drops faster when latency recovers.
type limiter struct {
	backend  string
	adaptive bool
	ceiling  int
	floor    int

	mu       sync.Mutex
	limit    float64
	inFlight int
	tenants  map[string]*tenantSlots
	queue    []*slotWaiter
	short    float64 // seconds; 0 before the first sample
	long     float64
	shrunkAt time.Time

	waits               atomic.Uint64
	timeouts, cancelled atomic.Uint64
	background          atomic.Uint64 // background calls refused
}

type tenantSlots struct {
	inFlight int
}

type slotWaiter struct {
	t       *tenantSlots
	ready   chan struct{} // closed when granted
	granted bool          // under limiter.mu
}

func newLimiter(backend string, ceiling int, adaptive bool) *limiter {
	l := &limiter{backend: backend, ceiling: ceiling, adaptive: adaptive, tenants: map[string]*tenantSlots{}}
	l.floor = min(MinConcurrency, ceiling)
	l.limit = float64(ceiling)
	if adaptive {
		l.limit = float64(min(InitialConcurrency, ceiling))
	}
	return l
}

// current is the limit as a count of calls.
func (l *limiter) current() int { return max(1, int(l.limit)) }

// share is a tenant's slots under the current limit.
func (l *limiter) share(s Settings) int {
	return max(1, int(math.Floor(float64(l.current())*s.TenantShare)))
}

func (l *limiter) tenant(name string) *tenantSlots {
	t := l.tenants[name]
	if t == nil {
		t = &tenantSlots{}
		l.tenants[name] = t
	}
	return t
}

// reserve is how many slots a tenant beyond its share leaves free.
func (l *limiter) reserve() int { return max(1, l.current()/8) }

// fair reports whether t, below its share, may take a slot now.
func (l *limiter) fair(t *tenantSlots, s Settings) bool {
	return l.inFlight < l.current() && t.inFlight < l.share(s)
}

// borrows reports whether a tenant at its share may take a slot now
// (with nobody below their share waiting). Only an adaptive limit lends:
// a SQL pool is a few connections (an eighth is one) and its tenants'
// pathological queries hold them for the whole query timeout, so there
// each tenant keeps to its share.
func (l *limiter) borrows() bool { return l.adaptive && l.inFlight < l.current()-l.reserve() }

func (l *limiter) take(t *tenantSlots) {
	l.inFlight++
	t.inFlight++
}

// acquire takes a slot for tenant, waiting at most s.QueueTimeout (and
// never past ctx). It returns the time the slot was taken, or a *BusyError,
// or ctx's error wrapped.
//
// A background call (upstream.IsBackground: a cache refresh no client
// waits for) never waits and never takes the last quarter of the limit:
// it runs only on capacity clients leave idle, so it never delays a
// client's call; otherwise it is refused at once (RefusedBackground).
func (l *limiter) acquire(ctx context.Context, tenant string, s Settings, now func() time.Time) (time.Time, error) {
	l.mu.Lock()
	t := l.tenant(tenant)
	if upstream.IsBackground(ctx) {
		limit, slots := l.current(), l.share(s)
		ok := len(l.queue) == 0 && l.inFlight < limit-max(1, limit/4) && (t.inFlight < slots || l.adaptive)
		if ok {
			l.take(t)
		}
		l.mu.Unlock()
		if !ok {
			l.background.Add(1)
			return time.Time{}, &BusyError{Backend: l.backend, Tenant: tenant, Limit: limit, Slots: slots}
		}
		return now(), nil
	}
	if len(l.queue) == 0 && (l.fair(t, s) || l.borrows()) {
		l.take(t)
		l.mu.Unlock()
		return now(), nil
	}
	w := &slotWaiter{t: t, ready: make(chan struct{})}
	l.queue = append(l.queue, w)
	l.dispatch(s)
	limit, slots := l.current(), l.share(s)
	l.mu.Unlock()
	select {
	case <-w.ready:
		return now(), nil
	default:
	}
	l.waits.Add(1)
	start := now()
	timer := time.NewTimer(s.QueueTimeout)
	defer timer.Stop()
	var cause error
	select {
	case <-w.ready:
		return now(), nil
	case <-timer.C:
	case <-ctx.Done():
		cause = context.Cause(ctx)
	}
	l.mu.Lock()
	if w.granted { // granted as the wait ended: keep it
		l.mu.Unlock()
		return now(), nil
	}
	for i, q := range l.queue {
		if q == w {
			l.queue = append(l.queue[:i], l.queue[i+1:]...)
			break
		}
	}
	l.dispatch(s) // a waiter behind this one may fit now
	l.mu.Unlock()
	if cause != nil {
		l.cancelled.Add(1)
		return time.Time{}, fmt.Errorf("breaker %s: waiting for a backend slot (limit %d, tenant share %d): %w",
			scopeName(l.backend, tenant), limit, slots, cause)
	}
	l.timeouts.Add(1)
	return time.Time{}, &BusyError{Backend: l.backend, Tenant: tenant, Limit: limit, Slots: slots, Waited: now().Sub(start)}
}

// dispatch grants slots to waiters: first, in order, to those below their
// tenant's share; then, in order, to the others while they may borrow.
// Called with mu held.
func (l *limiter) dispatch(s Settings) {
	grant := func(ok func(*slotWaiter) bool) {
		kept := l.queue[:0]
		for _, w := range l.queue {
			if ok(w) {
				l.take(w.t)
				w.granted = true
				close(w.ready)
				continue
			}
			kept = append(kept, w)
		}
		clear(l.queue[len(kept):])
		l.queue = kept
	}
	grant(func(w *slotWaiter) bool { return l.fair(w.t, s) })
	if len(l.queue) > 0 && l.borrows() {
		grant(func(*slotWaiter) bool { return l.borrows() })
	}
}

// Samples of release: what a call's latency says of the backend's load.
const (
	noSample      = iota // nothing: the caller went away, or a local bound was full
	answerSample         // an answer: its latency is the backend's
	failureSample        // a failure: only a slow one says something (a timeout)
)

// release returns tenant's slot; sample says what the call's latency, from
// its slot's start to now, tells of the backend's load. A failure faster
// than the long-term latency tells nothing (an error page sent at once, a
// refused connection): counting it would drag the baseline down and make
// the next answers look slow.
func (l *limiter) release(tenant string, started, now time.Time, sample int, s Settings) {
	l.mu.Lock()
	t := l.tenant(tenant)
	busy := l.inFlight*2 >= l.current() || len(l.queue) > 0
	l.inFlight--
	t.inFlight--
	if rtt := now.Sub(started); l.adaptive && (sample == answerSample || sample == failureSample && rtt.Seconds() >= l.long) {
		l.observe(rtt, now, busy)
	}
	l.dispatch(s)
	l.mu.Unlock()
}

// observe adapts the limit to one latency sample; busy says whether the
// limit was in use when the call ended. Called with mu held.
func (l *limiter) observe(rtt time.Duration, now time.Time, busy bool) {
	x := max(rtt.Seconds(), 1e-6)
	if l.short == 0 {
		l.short, l.long = x, x
	} else {
		l.short += (x - l.short) * shortWeight
		l.long += (x - l.long) * longWeight
		if l.long > 2*l.short { // latency recovered from a long episode
			l.long = max(l.short, l.long*0.95)
		}
	}
	if l.short <= latencyTolerance*l.long {
		if busy {
			l.limit = min(float64(l.ceiling), l.limit+math.Sqrt(l.limit))
		}
		return
	}
	if now.Sub(l.shrunkAt).Seconds() < l.long {
		return
	}
	l.shrunkAt = now
	l.limit = max(float64(l.floor), l.limit*max(0.5, latencyTolerance*l.long/l.short))
}

func (l *limiter) status(backend string) LimitStatus {
	l.mu.Lock()
	st := LimitStatus{Backend: backend, Adaptive: l.adaptive, Limit: l.current(), Ceiling: l.ceiling, InFlight: l.inFlight, Waiting: len(l.queue)}
	l.mu.Unlock()
	st.Waits = l.waits.Load()
	st.Refusals = map[string]uint64{RefusedQueueTimeout: l.timeouts.Load(), RefusedCanceled: l.cancelled.Load(), RefusedBackground: l.background.Load()}
	return st
}

// tenantStatus is a tenant's slots in use and its share.
func (l *limiter) tenantStatus(tenant string, s Settings) (inFlight, slots int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t := l.tenants[tenant]; t != nil {
		inFlight = t.inFlight
	}
	return inFlight, l.share(s)
}
