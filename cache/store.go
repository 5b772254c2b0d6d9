package cache

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/ristretto/v2"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/singleflight"
)

// Defaults for the zero fields of Options.
const (
	DefaultMaxBytes       = 256 << 20
	DefaultFillTimeout    = 10 * time.Second
	DefaultOverlayEntries = 256
	// DefaultAvgEntryBytes sizes ristretto's frequency counters: ten per
	// entry expected at this average size.
	DefaultAvgEntryBytes = 4 << 10
)

// Options configures a Store. The zero value is usable; each field documents
// its default.
type Options struct {
	// MaxBytes bounds the bytes held: the sum of every stored entry's cost
	// (body + gzip + strings + a fixed overhead), overlay included.
	// Default DefaultMaxBytes (256 MiB).
	MaxBytes int64
	// OverlayBytes is the part of MaxBytes reserved for just-filled entries
	// that ristretto dropped or refused. Default MaxBytes/32; negative
	// disables the overlay.
	OverlayBytes int64
	// OverlayEntries bounds the overlay's entry count. Default 256.
	OverlayEntries int
	// NumCounters is ristretto's count of frequency counters. Default ten
	// per DefaultAvgEntryBytes of MaxBytes, at least 1000.
	NumCounters int64
	// BufferItems is ristretto's Get buffer size: accesses are handed to
	// its admission policy in batches of this many, each waking the policy
	// goroutine. Default 256 (ristretto suggests 64; larger batches cost the
	// hit path fewer wake-ups on a small machine).
	BufferItems int64
	// FillTimeout bounds a fill when Policy.FillTimeout is zero.
	// Default DefaultFillTimeout (10s).
	FillTimeout time.Duration
	// Now is the clock for freshness. Default time.Now.
	Now func() time.Time
	// Logger receives loader panics and background refresh failures.
	// Default: discard.
	Logger *slog.Logger
	// TracerProvider makes the spans of coalescing: the flight's leader
	// runs its fill in a cache.fill span (a child of the caller's span),
	// and each Get that joined it records a cache.wait span linked to the
	// leader's. Nil: no spans. Hits never make spans.
	TracerProvider trace.TracerProvider
}

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

// Store is a read-through cache of rendered responses. It is safe for
// concurrent use. Create it with New and release it with Close.
type Store struct {
	c         *ristretto.Cache[uint64, *item]
	ov        *overlay
	seed      maphash.Seed
	now       func() time.Time
	log       *slog.Logger
	tracer    trace.Tracer // nil: no spans
	fillLimit time.Duration
	maxBytes  int64
	maxCost   int64 // ristretto's share of maxBytes

	group singleflight.Group
	bg    tracker // flights and background refreshes in progress

	gens    atomic.Pointer[generations]
	purgeMu sync.Mutex
	epoch   uint64 // guarded by purgeMu

	refreshMu  sync.Mutex
	refreshing map[refreshKey]struct{}

	// closeMu orders ristretto writes before Close; the hit path does not
	// take it (Close's contract is that Gets have returned).
	closeMu sync.RWMutex
	closed  atomic.Bool

	// dropSets makes store skip ristretto, as if every Set were dropped.
	// Tests set it to exercise the overlay deterministically.
	dropSets bool

	st counters
}

type counters struct {
	outcomes                                 [len(outcomeNames)]atomic.Uint64
	errors, loaderCalls, refreshes, panics   atomic.Uint64
	joins, getFlights                        atomic.Uint64 // Waiters = joins - getFlights
	evictions, rejects, overlayPuts, entries atomic.Uint64
	purges                                   [2]atomic.Uint64 // per PurgeMode
	purgedFills                              atomic.Uint64
}

// item is what the Store keeps in ristretto and the overlay. Immutable
// except for resident.
type item struct {
	key   Key
	hash  uint64
	gen   uint64
	entry *Entry
	cost  int64
	// resident moves 0 -> 1 when its flight sees it admitted (counted in
	// Stats.Entries) and to 2 when ristretto lets go of it.
	resident atomic.Uint32
}

type refreshKey struct {
	hash, gen uint64
}

type fillResult struct {
	entry  *Entry
	cached bool // found by the flight's re-check, no loader call
	// leader is the span context of the flight's cache.fill span, for the
	// waiters' links. A flight returns its result with its error too.
	leader trace.SpanContext
}

// New returns a Store configured by o.
func New(o Options) (*Store, error) {
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxBytes < 0 {
		return nil, fmt.Errorf("cache: MaxBytes %d is negative", o.MaxBytes)
	}
	switch {
	case o.OverlayBytes == 0:
		o.OverlayBytes = o.MaxBytes / 32
	case o.OverlayBytes < 0:
		o.OverlayBytes = 0
	}
	if o.OverlayBytes >= o.MaxBytes {
		return nil, fmt.Errorf("cache: OverlayBytes %d leaves nothing of MaxBytes %d", o.OverlayBytes, o.MaxBytes)
	}
	if o.OverlayEntries == 0 {
		o.OverlayEntries = DefaultOverlayEntries
	}
	if o.NumCounters <= 0 {
		o.NumCounters = max(10*(o.MaxBytes/DefaultAvgEntryBytes), 1000)
	}
	if o.BufferItems <= 0 {
		o.BufferItems = 256
	}
	if o.FillTimeout <= 0 {
		o.FillTimeout = DefaultFillTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Store{
		ov:         newOverlay(o.OverlayBytes, o.OverlayEntries),
		seed:       maphash.MakeSeed(),
		now:        o.Now,
		log:        o.Logger,
		fillLimit:  o.FillTimeout,
		maxBytes:   o.MaxBytes,
		maxCost:    o.MaxBytes - o.OverlayBytes,
		refreshing: make(map[refreshKey]struct{}),
	}
	if o.TracerProvider != nil {
		s.tracer = o.TracerProvider.Tracer("listingproxy/cache")
	}
	c, err := ristretto.NewCache(&ristretto.Config[uint64, *item]{
		NumCounters: o.NumCounters,
		MaxCost:     s.maxCost,
		BufferItems: o.BufferItems,
		// Costs are bytes we compute, overhead included.
		IgnoreInternalCost: true,
		// Keys are our own 64-bit hashes; items carry the full Key.
		KeyToHash:    func(h uint64) (uint64, uint64) { return h, 0 },
		OnEvict:      func(*ristretto.Item[*item]) { s.st.evictions.Add(1) },
		OnReject:     func(*ristretto.Item[*item]) { s.st.rejects.Add(1) },
		OnExit:       s.onExit,
		ShouldUpdate: func(cur, prev *item) bool { return cur.gen >= prev.gen },
	})
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	s.c = c
	return s, nil
}

// onExit runs when ristretto lets go of a value (eviction, refusal,
// replacement, deletion).
func (s *Store) onExit(it *item) {
	if it != nil && it.resident.Swap(2) == 1 {
		s.st.entries.Add(^uint64(0))
	}
}

// Get returns the entry for k, loading it with load on a miss.
//
// It never returns an error together with an entry. On error the Outcome is
// Miss (Bypass when caching was bypassed); the error is the loader's (wrapped
// with the key), a *PanicError, or ctx's error when ctx ended first. An
// The returned Entry is
// shared and must not be modified.
func (s *Store) Get(ctx context.Context, k Key, p Policy, load Loader) (*Entry, Outcome, error) {
	if p.TTL <= 0 || s.closed.Load() {
		return s.bypass(ctx, k, p, load)
	}
	now := s.now()
	g := s.genOf(k)
	gen := g.fill
	h := s.hash(k)
	var stale *item
	if it, current := s.lookup(h, k, g); it != nil && !current {
		// Soft-purged: a fill first, the old body only if it fails.
		if e := it.entry; !e.Negative && now.Sub(e.StoredAt) < p.TTL+p.StaleIfError {
			stale = it
		}
	} else if it != nil {
		e := it.entry
		age := now.Sub(e.StoredAt)
		switch {
		case e.Negative:
			if age < p.NegativeTTL {
				s.st.outcomes[Negative].Add(1)
				return e, Negative, nil
			}
		case age < p.TTL:
			s.st.outcomes[Hit].Add(1)
			return e, Hit, nil
		case age < p.TTL+p.StaleWhileRevalidate:
			s.refresh(ctx, h, k, gen, p, load)
			s.st.outcomes[Stale].Add(1)
			return e, Stale, nil
		case age < p.TTL+p.StaleIfError:
			stale = it
		}
	}
	return s.fill(ctx, h, k, gen, p, load, stale)
}

// Fresh returns the entry stored for k when Get would answer it as a Hit or
// a Negative without calling a loader, counting the outcome as Get does,
// with the time it judged the entry at (so the caller need not read the
// clock again: the entry's age is now minus Entry.StoredAt); ok
// is false when the caller must call Get. It lets a caller build its Loader
// (usually a closure) only when the answer is not already stored and fresh.
func (s *Store) Fresh(k Key, p Policy) (_ *Entry, _ Outcome, now time.Time, ok bool) {
	if p.TTL <= 0 || s.closed.Load() {
		return nil, Bypass, now, false
	}
	it, current := s.lookup(s.hash(k), k, s.genOf(k))
	if !current {
		return nil, Miss, now, false
	}
	e := it.entry
	now = s.now()
	age := now.Sub(e.StoredAt)
	switch {
	case e.Negative && age < p.NegativeTTL:
		s.st.outcomes[Negative].Add(1)
		return e, Negative, now, true
	case !e.Negative && age < p.TTL:
		s.st.outcomes[Hit].Add(1)
		return e, Hit, now, true
	}
	return nil, Miss, now, false
}

// fill waits for the key's flight, starting it if needed. stale, when not
// nil, is served if the flight fails.
func (s *Store) fill(ctx context.Context, h uint64, k Key, gen uint64, p Policy, load Loader, stale *item) (*Entry, Outcome, error) {
	if err := ctx.Err(); err != nil {
		return s.failed(k, stale, err)
	}
	var w *waiter
	if s.tracer != nil {
		w = &waiter{start: time.Now()}
	}
	ch := s.group.DoChan(flightKey('f', gen, k), s.flight(ctx, h, k, gen, p, load, true, w))
	s.st.joins.Add(1) // after DoChan: the call is registered with the flight
	select {
	case r := <-ch:
		res, _ := r.Val.(*fillResult)
		if w != nil {
			s.traceWait(ctx, w, k, res, r.Err)
		}
		if r.Err != nil {
			return s.failed(k, stale, r.Err)
		}
		o := Miss
		if res.cached {
			o = Hit
			if res.entry.Negative {
				o = Negative
			}
		}
		s.st.outcomes[o].Add(1)
		return res.entry, o, nil
	case <-ctx.Done():
		if w != nil {
			s.traceWait(ctx, w, k, nil, ctx.Err())
		}
		return s.failed(k, stale, ctx.Err())
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

// failed serves stale if there is one, else reports err.
func (s *Store) failed(k Key, stale *item, err error) (*Entry, Outcome, error) {
	if stale != nil {
		s.st.outcomes[StaleIfError].Add(1)
		s.log.Debug("cache: serving stale after failed fill",
			"tenant", k.Tenant, "resource", k.Resource, "err", err)
		return stale.entry, StaleIfError, nil
	}
	s.st.errors.Add(1)
	return nil, Miss, wrapErr(k, err)
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
func (s *Store) flight(ctx context.Context, h uint64, k Key, gen uint64, p Policy, load Loader, fromGet bool, w *waiter) func() (any, error) {
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
		if it := s.lookupCurrent(h, k, gen); it != nil && p.fresh(it.entry, s.now()) {
			res.entry, res.cached = it.entry, true
			return res, nil
		}
		e, err := s.load(ctx, p, load)
		if err != nil {
			return res, err
		}
		if s.genOf(k).fill == gen {
			s.store(h, k, gen, e, p)
		} else {
			s.st.purgedFills.Add(1)
		}
		res.entry = e
		return res, nil
	}
}

// load runs the loader once on a context detached from ctx's cancellation,
// turning a panic into a *PanicError.
func (s *Store) load(ctx context.Context, p Policy, load Loader) (e *Entry, err error) {
	limit := p.FillTimeout
	if limit <= 0 {
		limit = s.fillLimit
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), limit)
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

// store makes e readable for k before the flight ends: in ristretto if it
// admits it, else in the overlay.
func (s *Store) store(h uint64, k Key, gen uint64, e *Entry, p Policy) {
	life := p.lifetime(e)
	ttl := life - s.now().Sub(e.StoredAt)
	if life <= 0 || ttl <= 0 {
		return
	}
	it := &item{key: k, hash: h, gen: gen, entry: e, cost: cost(k, e)}

	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed.Load() {
		return
	}
	if it.cost <= s.maxCost && !s.dropSets {
		// ristretto raises an existing key's cost without evicting, so a
		// bigger replacement goes in as a new key.
		if old, ok := s.c.Get(h); ok && it.cost > old.cost {
			s.c.Del(h)
		}
		s.c.SetWithTTL(h, it, it.cost, ttl)
		s.c.Wait()
		if got, ok := s.c.Get(h); ok && got == it {
			if it.resident.CompareAndSwap(0, 1) {
				s.st.entries.Add(1)
			}
			s.ov.del(h)
			return
		}
	} else if it.cost > s.maxCost {
		s.st.rejects.Add(1)
	}
	if s.ov.put(h, it) {
		s.st.overlayPuts.Add(1)
	}
}

// refresh starts one background refresh for the key unless one is running.
func (s *Store) refresh(ctx context.Context, h uint64, k Key, gen uint64, p Policy, load Loader) {
	rk := refreshKey{h, gen}
	s.refreshMu.Lock()
	if _, running := s.refreshing[rk]; running {
		s.refreshMu.Unlock()
		return
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
		r := <-s.group.DoChan(flightKey('f', gen, k), s.flight(ctx, h, k, gen, p, load, false, nil))
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
}

// bypass loads without the cache, still coalescing identical calls.
func (s *Store) bypass(ctx context.Context, k Key, p Policy, load Loader) (*Entry, Outcome, error) {
	s.st.outcomes[Bypass].Add(1)
	if err := ctx.Err(); err != nil {
		s.st.errors.Add(1)
		return nil, Bypass, err
	}
	ch := s.group.DoChan(flightKey('b', s.genOf(k).fill, k), func() (any, error) {
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

// lookup returns the item stored for k, from ristretto or else the
// overlay, unless a hard purge hides it. current is true when no purge at
// all has covered it since its fill started (it.gen == g.fill); an item
// returned with current false was soft-purged: only a failed fill may serve
// it.
func (s *Store) lookup(h uint64, k Key, g epochs) (_ *item, current bool) {
	if it, ok := s.c.Get(h); ok && it.gen >= g.hard && it.key == k {
		return it, it.gen == g.fill
	}
	if it := s.ov.get(h, k, g.hard); it != nil {
		return it, it.gen == g.fill
	}
	return nil, false
}

// lookupCurrent returns the item for k at generation gen (not purged since),
// or nil.
func (s *Store) lookupCurrent(h uint64, k Key, gen uint64) *item {
	if it, current := s.lookup(h, k, epochs{fill: gen, hard: gen}); current {
		return it
	}
	return nil
}

// hash is k's ristretto key. Collisions cost only a miss: lookups compare
// the whole Key.
func (s *Store) hash(k Key) uint64 {
	const m = 0x9E3779B97F4A7C15
	h := maphash.String(s.seed, k.Tenant)
	h = (h*m ^ maphash.String(s.seed, k.Resource)) * m
	h = (h ^ maphash.String(s.seed, k.Scope)) * m
	return h ^ maphash.String(s.seed, k.Variant)
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

// PurgeMode says what a purge does to the entries it covers.
type PurgeMode uint8

const (
	// Soft makes the entries stale at once: the next Get waits for a fill
	// as on a miss (it is not answered stale-while-revalidate), and gets
	// the old body, as StaleIfError, only if that fill fails while the
	// entry is within TTL + StaleIfError of its StoredAt. Negative entries
	// have no stale phase: a soft purge drops them.
	Soft PurgeMode = iota
	// Hard drops the entries: no later Get is answered with them, even
	// when its fill fails.
	Hard
)

// String returns "soft" or "hard".
func (m PurgeMode) String() string {
	if m == Hard {
		return "hard"
	}
	return "soft"
}

// epochs are the generations of one scope: fill is the epoch of the latest
// purge of either mode, hard that of the latest hard purge (hard <= fill).
type epochs struct{ fill, hard uint64 }

// join is the componentwise maximum: a key is covered by the purges of its
// store, its tenant and its resource.
func (e epochs) join(o epochs) epochs {
	return epochs{max(e.fill, o.fill), max(e.hard, o.hard)}
}

// covers reports whether e makes o redundant.
func (e epochs) covers(o epochs) bool { return o.fill <= e.fill && o.hard <= e.hard }

// generations records the epochs of the latest purges for the whole store,
// per tenant and per tenant resource. Copy-on-write: never modified once
// published.
type generations struct {
	all      epochs
	tenant   map[string]epochs
	resource map[tenantResource]epochs
}

type tenantResource struct{ tenant, resource string }

// genOf is k's generations: the epochs of the latest purges that cover it.
func (s *Store) genOf(k Key) epochs {
	g := s.gens.Load()
	if g == nil {
		return epochs{}
	}
	return g.all.join(g.tenant[k.Tenant]).join(g.resource[tenantResource{k.Tenant, k.Resource}])
}

// Purge purges a tenant's entries: every entry of the tenant when resource
// is "", else those of that resource. A Soft purge makes them stale, a Hard
// purge drops them (see PurgeMode). Either way, fills that started before
// the purge are neither stored nor served to requests that arrive after it.
func (s *Store) Purge(tenant, resource string, mode PurgeMode) {
	s.purge(tenant, resource, false, mode)
}

// PurgeAll purges every entry of every tenant, as Purge does.
func (s *Store) PurgeAll(mode PurgeMode) {
	s.purge("", "", true, mode)
}

func (s *Store) purge(tenant, resource string, all bool, mode PurgeMode) {
	s.purgeMu.Lock()
	s.epoch++
	e := epochs{fill: s.epoch}
	if mode == Hard {
		e.hard = s.epoch
	}
	old := s.gens.Load()
	if old == nil {
		old = &generations{}
	}
	n := &generations{
		all:      old.all,
		tenant:   make(map[string]epochs, len(old.tenant)+1),
		resource: make(map[tenantResource]epochs, len(old.resource)+1),
	}
	if all {
		n.all = n.all.join(e)
	}
	// Keep only records that the broader ones have not overtaken in both
	// epochs.
	for t, g := range old.tenant {
		if !n.all.covers(g) {
			n.tenant[t] = g
		}
	}
	if !all && resource == "" {
		n.tenant[tenant] = n.tenant[tenant].join(e)
	}
	for tr, g := range old.resource {
		if !n.all.join(n.tenant[tr.tenant]).covers(g) {
			n.resource[tr] = g
		}
	}
	if !all && resource != "" {
		tr := tenantResource{tenant, resource}
		n.resource[tr] = n.resource[tr].join(e)
	}
	s.gens.Store(n)
	s.purgeMu.Unlock()
	if mode == Hard {
		s.ov.purge(tenant, resource, all)
	}
	s.st.purges[mode&1].Add(1)
}

// Stats is a snapshot of plain counters since New.
type Stats struct {
	// Per Outcome, counted once per Get.
	Hits, Stale, StaleIfError, Misses, Negative, Bypass uint64
	// Errors counts Gets that returned an error.
	Errors uint64
	// LoaderCalls counts loader invocations (foreground, background, bypass).
	LoaderCalls uint64
	// Waiters counts Gets that joined a flight another caller started
	// (coalesced). It may briefly run ahead while a flight is starting.
	Waiters uint64
	// Refreshes counts background refreshes started.
	Refreshes uint64
	// Panics counts loader panics.
	Panics uint64
	// Bytes is the cost held now (ristretto plus overlay); never above
	// MaxBytes. Entries is the entry count held in ristretto, and
	// OverlayEntries the count in the overlay.
	Bytes, MaxBytes, Entries, OverlayEntries int64
	// Evictions counts entries ristretto evicted (for room or expiry);
	// Rejections counts entries it refused at admission or that were too
	// large; OverlayPuts counts entries kept readable by the overlay.
	Evictions, Rejections, OverlayPuts uint64
	// SoftPurges and HardPurges count Purge and PurgeAll calls by mode;
	// PurgedFills counts fills whose result was not stored because a purge
	// (of either mode) happened during them.
	SoftPurges, HardPurges, PurgedFills uint64
}

// Stats returns the current counters.
func (s *Store) Stats() Stats {
	st := Stats{
		Hits:         s.st.outcomes[Hit].Load(),
		Stale:        s.st.outcomes[Stale].Load(),
		StaleIfError: s.st.outcomes[StaleIfError].Load(),
		Misses:       s.st.outcomes[Miss].Load(),
		Negative:     s.st.outcomes[Negative].Load(),
		Bypass:       s.st.outcomes[Bypass].Load(),
		Errors:       s.st.errors.Load(),
		LoaderCalls:  s.st.loaderCalls.Load(),
		Refreshes:    s.st.refreshes.Load(),
		Panics:       s.st.panics.Load(),
		MaxBytes:     s.maxBytes,
		Entries:      int64(s.st.entries.Load()),
		Evictions:    s.st.evictions.Load(),
		Rejections:   s.st.rejects.Load(),
		OverlayPuts:  s.st.overlayPuts.Load(),
		SoftPurges:   s.st.purges[Soft].Load(),
		HardPurges:   s.st.purges[Hard].Load(),
		PurgedFills:  s.st.purgedFills.Load(),
	}
	if j, f := s.st.joins.Load(), s.st.getFlights.Load(); j > f {
		st.Waiters = j - f
	}
	ovEntries, ovBytes := s.ov.stats()
	st.OverlayEntries = ovEntries
	st.Bytes = ovBytes
	if !s.closed.Load() {
		st.Bytes += s.maxCost - s.c.RemainingCost()
	}
	return st
}

// Wait blocks until every fill and background refresh in progress has
// finished and its value is readable. Tests call it; the proxy need not.
func (s *Store) Wait() {
	s.bg.wait()
	s.closeMu.RLock()
	if !s.closed.Load() {
		s.c.Wait()
	}
	s.closeMu.RUnlock()
}

// Close waits for fills and refreshes in progress and releases the cache.
// Call it after every Get has returned (e.g. after the server's Shutdown);
// a Get after Close loads without caching (Bypass).
func (s *Store) Close() {
	if s.closed.Swap(true) {
		return
	}
	s.bg.wait()
	s.closeMu.Lock()
	s.c.Close()
	s.closeMu.Unlock()
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
