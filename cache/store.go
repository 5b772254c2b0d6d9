package cache

import (
	"context"
	"fmt"
	"hash/maphash"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/ristretto/v2"
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
	// RefreshBudget, when set, is asked before each refresh-ahead (see
	// Policy.RefreshAhead) and skips it when it answers false: a budget of
	// background calls per backend (the proxy's, per backend, calls a
	// second). A skipped refresh-ahead costs nothing: the entry expires
	// and is refilled as it would have been. Nil: no budget.
	RefreshBudget func(Key) bool
	// SecondTier is a cache shared with other processes, consulted inside
	// flights (never on a first-tier hit). Default: none.
	SecondTier SecondTier
	// Generations records purges for, and delivers purges from, other
	// processes. Default: this process alone.
	Generations Generations
	// RecordLifetime is how long the record of a purge by tags
	// (PurgeTags) is kept: at least the longest lifetime of any entry (TTL
	// plus the longer stale window, or NegativeTTL), which it also learns
	// from the Policies it is given. Default DefaultRecordLifetime (24h).
	RecordLifetime time.Duration
	// MaxRecords bounds the records of purges by tags; past it the oldest
	// is folded into a purge of its whole tenant. Default
	// DefaultMaxRecords (100,000).
	MaxRecords int
	// Adopt, when set, is called once on each entry the SecondTier
	// returns, before the Store shares it: the place to attach the Meta a
	// Loader would have attached. Default: none.
	Adopt func(*Entry)

	// ristrettoMetrics turns ristretto's own counters on (tests count the
	// accesses its admission policy is given).
	ristrettoMetrics bool
}

// Store is a read-through cache of rendered responses. It is safe for
// concurrent use. Create it with New and release it with Close.
type Store struct {
	c         *ristretto.Cache[uint64, *item]
	idx       *index
	ov        *overlay
	seed      maphash.Seed
	now       func() time.Time
	log       *slog.Logger
	tracer    trace.Tracer // nil: no spans
	fillLimit time.Duration
	maxBytes  int64
	maxCost   int64 // ristretto's share of maxBytes

	tier        SecondTier
	generations Generations
	adopt       func(*Entry)

	group singleflight.Group
	bg    tracker // flights and background refreshes in progress

	gens    atomic.Pointer[generations]
	purgeMu sync.Mutex
	epoch   uint64 // guarded by purgeMu

	tags           tagRecords
	recordLifetime time.Duration
	maxRecords     int
	maxLife        atomic.Int64 // the longest entry lifetime seen, in ns

	refreshMu  sync.Mutex
	refreshing map[refreshKey]struct{}
	// refreshBudget is Options.RefreshBudget.
	refreshBudget func(Key) bool

	// closeMu orders ristretto writes before Close; the hit path does not
	// take it (Close's contract is that Gets have returned).
	closeMu sync.RWMutex
	closed  atomic.Bool

	// dropSets makes store skip ristretto, as if every Set were dropped.
	// Tests set it to exercise the overlay deterministically.
	dropSets bool

	st counters

	// events and purges are the records Inspect reads: the latest
	// first-tier event of recent keys, and the recent purges.
	events keyEvents
	purges purgeLog
}

// item is what the Store keeps in ristretto and the overlay. Immutable
// except for resident and state.
type item struct {
	key   Key
	hash  uint64
	gen   uint64
	entry *Entry
	cost  int64
	// state is the tenant's fine epoch the item was last checked against
	// (shifted left by two) and what purges by tags did to it (markNone,
	// markSoft, markHard; it only grows). See Store.judge.
	state atomic.Uint64
	// resident moves 0 -> 1 when its flight sees it admitted (counted in
	// Stats.Entries) and to 2 when ristretto lets go of it.
	resident atomic.Uint32
	// hits counts the item's fresh hits up to Policy.RefreshHits (it is
	// not written past that); ahead is set once a refresh-ahead has been
	// decided for it (started, or skipped for the budget).
	hits  atomic.Uint32
	ahead atomic.Bool
	// hint is the record Hints of the item point to, once one was asked
	// for (hintOf); cleared when ristretto lets go of the item (unhint).
	hint atomic.Pointer[hintRef]
}

// dueAhead reports whether a fresh hit on it at age under p, its entry
// not negative (the callers' switches have ruled that out), should start
// a refresh-ahead: it is hot (at least p.RefreshHits hits in its life),
// past p.RefreshAhead of its TTL, and none was decided for it yet. The
// hit path pays one atomic load once the item is hot.
//
// ref is the Hint record the hit came through (nil: a lookup). It keeps
// the item's count once that is known to be hot enough, so that a hit
// through a Hint reads the item only before that and within the refresh
// window: among many keys the item was a cold read of its own on every
// such hit (bench/NOTES.md, "The hit's chain of cold reads").
func (it *item) dueAhead(p Policy, age time.Duration, ref *hintRef) bool {
	if p.RefreshAhead <= 0 {
		return false
	}
	need := uint32(p.refreshHits())
	if ref == nil || ref.hits.Load() < need {
		n := it.hits.Load()
		if n < need {
			it.hits.Add(1)
			return false
		}
		if ref != nil {
			ref.hits.Store(n)
		}
	}
	return age >= p.refreshAt() && !it.ahead.Load()
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
	if o.RecordLifetime <= 0 {
		o.RecordLifetime = DefaultRecordLifetime
	}
	if o.MaxRecords <= 0 {
		o.MaxRecords = DefaultMaxRecords
	}
	s := &Store{
		idx:            newIndex(),
		recordLifetime: o.RecordLifetime,
		maxRecords:     o.MaxRecords,
		ov:             newOverlay(o.OverlayBytes, o.OverlayEntries),
		seed:           maphash.MakeSeed(),
		now:            o.Now,
		log:            o.Logger,
		fillLimit:      o.FillTimeout,
		maxBytes:       o.MaxBytes,
		maxCost:        o.MaxBytes - o.OverlayBytes,
		refreshing:     make(map[refreshKey]struct{}),
		events:         newKeyEvents(o.MaxBytes),
	}
	s.ov.dropped = func(it *item) { s.note(it, EventOverlayFull) }
	if o.TracerProvider != nil {
		s.tracer = o.TracerProvider.Tracer("listingproxy/cache")
	}
	c, err := ristretto.NewCache(&ristretto.Config[uint64, *item]{
		NumCounters: o.NumCounters,
		MaxCost:     s.maxCost,
		BufferItems: o.BufferItems,
		// Costs are bytes we compute, overhead included.
		IgnoreInternalCost: true,
		Metrics:            o.ristrettoMetrics,
		// Keys are our own 64-bit hashes; items carry the full Key.
		KeyToHash:    func(h uint64) (uint64, uint64) { return h, 0 },
		OnEvict:      s.onEvict,
		OnReject:     func(*ristretto.Item[*item]) { s.st.rejects.Add(1) },
		OnExit:       s.onExit,
		ShouldUpdate: func(cur, prev *item) bool { return cur.gen >= prev.gen },
	})
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	s.c = c
	s.tier, s.generations, s.adopt = o.SecondTier, o.Generations, o.Adopt
	s.refreshBudget = o.RefreshBudget
	if s.tier == nil {
		s.tier = noTier{}
	}
	if s.generations == nil {
		s.generations = localGenerations{}
	}
	s.generations.Watch(s.received)
	return s, nil
}

// onEvict runs when ristretto evicts a value: for room, or (with an
// expiration) at the end of its lifetime.
func (s *Store) onEvict(i *ristretto.Item[*item]) {
	s.st.evictions.Add(1)
	if i.Expiration.IsZero() {
		s.note(i.Value, EventEvicted)
	} else {
		s.note(i.Value, EventExpired)
	}
}

// onExit runs when ristretto lets go of a value (eviction, refusal,
// replacement, deletion).
func (s *Store) onExit(it *item) {
	if it != nil && s.idx.exit(it) {
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
	e, o, _, err := s.GetSource(ctx, k, p, load)
	return e, o, err
}

// GetSource is Get, and says where the entry came from: this process
// (its memory or its loader call), the second tier's stored entry, or
// another process's fill (see Source). With an error the Source is
// FromFirst.
func (s *Store) GetSource(ctx context.Context, k Key, p Policy, load Loader) (*Entry, Outcome, Source, error) {
	if p.TTL <= 0 || s.closed.Load() {
		e, o, err := s.bypass(ctx, k, p, load)
		return e, o, FromFirst, err
	}
	now := s.now()
	g := s.genOf(k)
	gen := g.flight()
	h := s.hash(k)
	var stale *item
	if it, current := s.lookup(h, k, g); it != nil && !current {
		// Soft-purged: a fill first, the old body only if it fails.
		if e := it.entry; p.servableOnError(e, now.Sub(e.StoredAt)) {
			stale = it
		}
	} else if it != nil {
		e := it.entry
		age := now.Sub(e.StoredAt)
		switch {
		case e.Negative:
			if age < p.NegativeTTL {
				s.st.outcomes[Negative].Add(1)
				return e, Negative, FromFirst, nil
			}
			if p.servableOnError(e, age) {
				stale = it
			}
		case age < p.TTL:
			if it.dueAhead(p, age, nil) && it.ahead.CompareAndSwap(false, true) {
				s.refreshAhead(ctx, h, k, gen, p, load, e)
			}
			s.st.outcomes[Hit].Add(1)
			return e, Hit, FromFirst, nil
		case age < p.TTL+p.StaleWhileRevalidate:
			s.refresh(ctx, h, k, gen, p, load, nil)
			s.st.outcomes[Stale].Add(1)
			return e, Stale, FromFirst, nil
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
	return s.FreshHashed(k, s.VariantHash(k.Variant), p)
}

// VariantHash is the part of a Key's hash taken from its Variant alone.
// A caller that asks for the same Variant many times (the proxy keeps it
// with its memo of canonical criteria) computes it once and passes it to
// FreshHashed, which then reads no byte of the Variant: among many hot
// keys, whose Variants are not in the CPU caches, a cache miss fewer per
// hit (bench/NOTES.md, "One line of the memo per hit").
func (s *Store) VariantHash(variant string) uint64 { return maphash.String(s.seed, variant) }

// FreshHashed is Fresh for a caller that holds vh, k.Variant's
// VariantHash. A wrong vh finds nothing (a miss, never another key's
// entry: a lookup compares the whole Key).
func (s *Store) FreshHashed(k Key, vh uint64, p Policy) (_ *Entry, _ Outcome, now time.Time, ok bool) {
	e, o, now, _, ok := s.freshHashed(k, vh, p, false)
	return e, o, now, ok
}

// freshHashed is FreshHashed, and with hint FreshHashedHint.
func (s *Store) freshHashed(k Key, vh uint64, p Policy, hint bool) (_ *Entry, _ Outcome, now time.Time, h Hint, ok bool) {
	if p.TTL <= 0 || s.closed.Load() {
		return nil, Bypass, now, h, false
	}
	g := s.gens.Load()
	it, current := s.lookup(s.hashWith(k, vh), k, g.of(k))
	if !current {
		return nil, Miss, now, h, false
	}
	e := it.entry
	e, o, now, ok := s.fresh(it, nil, e, e.StoredAt, e.Negative, p)
	if ok && hint {
		h = s.hintOf(it, g)
	}
	return e, o, now, h, ok
}

// fresh is FreshHashed for the current item it of the key, whose entry
// e was stored at storedAt and is negative or not, reached through the
// Hint record ref (nil: a lookup): e when fresh under p (counted), else
// not ok. The caller passes e's fields so that a Hint's record can hold
// them: the decision then waits on no read of e.
func (s *Store) fresh(it *item, ref *hintRef, e *Entry, storedAt time.Time, negative bool, p Policy) (_ *Entry, _ Outcome, now time.Time, ok bool) {
	now = s.now()
	age := now.Sub(storedAt)
	switch {
	case negative && age < p.NegativeTTL:
		s.st.outcomes[Negative].Add(1)
		return e, Negative, now, true
	case !negative && age < p.TTL:
		if it.dueAhead(p, age, ref) {
			// A refresh-ahead needs the caller's loader: Get starts it.
			return nil, Miss, now, false
		}
		s.st.outcomes[Hit].Add(1)
		return e, Hit, now, true
	}
	return nil, Miss, now, false
}

// store makes e readable for k before the flight ends: in ristretto if it
// admits it, else in the overlay.
func (s *Store) store(h uint64, k Key, gen uint64, e *Entry, p Policy) {
	life := p.lifetime(e)
	ttl := life - s.now().Sub(e.StoredAt)
	if life <= 0 || ttl <= 0 {
		return
	}
	if int64(life) > s.maxLife.Load() {
		s.noteLife(life)
	}
	it := &item{key: k, hash: h, gen: gen, entry: e, cost: cost(k, e)}
	it.state.Store(gen << 2)

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
			if s.idx.admit(it) {
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
		s.note(it, EventNotAdmitted)
	} else if it.cost > s.maxCost {
		s.note(it, EventTooLarge)
	} else {
		s.note(it, EventNotAdmitted)
	}
}

// lookup returns the item stored for k, from the index of ristretto's
// items or else the overlay, unless a hard purge hides it. current is true when no purge at
// all has covered it since its fill started (it.gen >= g.fill: a fill in
// another process may be newer than the last purge seen here); an item
// returned with current false was soft-purged: only a failed fill may serve
// it.
func (s *Store) lookup(h uint64, k Key, g epochs) (_ *item, current bool) {
	if sampled() {
		s.c.Get(h) // the admission policy's sample of accesses (see index)
	}
	if it := s.idx.get(h); it != nil && it.gen >= g.hard && it.key == k {
		if st := it.state.Load(); st>>2 >= g.fine && st&3 == markNone {
			return it, it.gen >= g.fill // not touched by a purge by tags
		}
		return s.judge(it, g)
	}
	if it := s.ov.get(h, k, g.hard); it != nil {
		return s.judge(it, g)
	}
	return nil, false
}

// lookupCurrent returns the item for k at generation gen (not purged since),
// or nil.
func (s *Store) lookupCurrent(h uint64, k Key, gen uint64) *item {
	if it, current := s.lookup(h, k, epochs{fill: gen, hard: gen, fine: gen}); current {
		return it
	}
	return nil
}

// noteLife raises the longest entry lifetime seen to life.
func (s *Store) noteLife(life time.Duration) {
	for {
		old := s.maxLife.Load()
		if int64(life) <= old || s.maxLife.CompareAndSwap(old, int64(life)) {
			return
		}
	}
}

// hash is k's ristretto key. Collisions cost only a miss: lookups compare
// the whole Key.
func (s *Store) hash(k Key) uint64 { return s.hashWith(k, s.VariantHash(k.Variant)) }

// hashWith is hash with k.Variant's VariantHash given.
func (s *Store) hashWith(k Key, vh uint64) uint64 {
	const m = 0x9E3779B97F4A7C15
	h := maphash.String(s.seed, k.Tenant)
	h = (h*m ^ maphash.String(s.seed, k.Resource)) * m
	h = (h ^ maphash.String(s.seed, k.Scope)) * m
	return h ^ vh
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
