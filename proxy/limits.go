package proxy

import (
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// clockMemo is a bounded map that evicts by the CLOCK algorithm (second
// chance, an approximation of least recently used): a hit only sets an
// atomic flag under a read lock, so hits on many goroutines do not
// serialise as they would on an LRU list's write lock, and eviction
// skips, once, any entry used since the hand last passed it.
//
// Hand-written rather than ristretto because the memo of verified
// credentials needs what ristretto does not promise: a value set is there
// for the next request (ristretto's Set is asynchronous and its admission
// policy may refuse a new key, so a verified header would be hashed with
// bcrypt again), and a hit as cheap as a map lookup.
//
// It also holds the criteria memo (memo.go), keyed by raw query string and
// bounded in bytes as well as in entries: an entry's cost is what costOf
// estimates (1 when costOf is nil), and the hand evicts until the new
// entry fits the budget.
type clockMemo[K comparable, V any] struct {
	mu     sync.RWMutex
	m      map[K]*clockEntry[K, V]
	ring   []*clockEntry[K, V] // entries by slot (nil: free); the hand walks it
	free   []int               // free slots below len(ring)
	hand   int
	max    int // slots
	budget int // total cost
	used   int
	costOf func(K, V) int
}

// clockEntry is one memo entry. A hit reads used and v, so they come
// first: with a value of a few words (the criteria memo's parsedQuery
// begins with what a hit needs) the hit reads one cache line of the entry.
type clockEntry[K comparable, V any] struct {
	used atomic.Bool
	v    V
	k    K
	cost int
	slot int // its index in ring
}

// newClockMemo holds up to size entries.
func newClockMemo[K comparable, V any](size int) *clockMemo[K, V] {
	return newClockMemoCost[K, V](size, size, nil)
}

// newClockMemoCost holds up to size entries whose costs add up to at most
// budget; an entry costing more than the budget is not kept.
func newClockMemoCost[K comparable, V any](size, budget int, costOf func(K, V) int) *clockMemo[K, V] {
	return &clockMemo[K, V]{m: make(map[K]*clockEntry[K, V]), max: max(size, 1), budget: max(budget, 1), costOf: costOf}
}

func (c *clockMemo[K, V]) get(k K) (V, bool) {
	e := c.entry(k)
	if e == nil {
		var zero V
		return zero, false
	}
	return e.v, true
}

// ref is get's value in place, for values too large to copy per hit;
// nil when k is not held. The value is immutable: a caller must not
// modify it.
func (c *clockMemo[K, V]) ref(k K) *V {
	if e := c.entry(k); e != nil {
		return &e.v
	}
	return nil
}

// entry is get's entry, marked used; nil when k is not held. An entry is
// immutable but for its flag: a caller may keep it and mark it used again
// (touch), which is harmless once it is evicted.
func (c *clockMemo[K, V]) entry(k K) *clockEntry[K, V] {
	c.mu.RLock()
	e := c.m[k]
	c.mu.RUnlock()
	if e != nil {
		e.touch()
	}
	return e
}

// touch marks e used since the hand last passed it.
func (e *clockEntry[K, V]) touch() {
	if !e.used.Load() { // a store only when needed: no cache-line churn on hits
		e.used.Store(true)
	}
}

func (c *clockMemo[K, V]) put(k K, v V) { c.store(k, v, false) }

// set is put for a value that replaces k's: the old entry, which readers
// may still hold, is left as it was and a new one takes its slot.
func (c *clockMemo[K, V]) set(k K, v V) { c.store(k, v, true) }

func (c *clockMemo[K, V]) store(k K, v V, replace bool) {
	cost := 1
	if c.costOf != nil {
		cost = c.costOf(k, v)
	}
	if cost > c.budget {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.m[k]; old != nil {
		if !replace {
			return // an entry is immutable once published (readers hold it unlocked); the old one is as good
		}
		c.drop(old.slot)
	}
	for c.used+cost > c.budget || (len(c.free) == 0 && len(c.ring) == c.max) {
		c.evict()
	}
	e := &clockEntry[K, V]{k: k, v: v, cost: cost}
	if n := len(c.free); n > 0 {
		e.slot = c.free[n-1]
		c.ring[e.slot] = e
		c.free = c.free[:n-1]
	} else {
		e.slot = len(c.ring)
		c.ring = append(c.ring, e)
	}
	c.m[k] = e
	c.used += cost
}

// evict frees one slot: the first entry at or after the hand not used
// since the hand last passed it. The caller holds the write lock and
// c.m is not empty.
func (c *clockMemo[K, V]) evict() {
	for {
		i := c.hand
		c.hand = (c.hand + 1) % len(c.ring)
		e := c.ring[i]
		if e == nil {
			continue
		}
		if e.used.Load() {
			e.used.Store(false)
			continue
		}
		c.drop(i)
		return
	}
}

// drop frees ring slot i and forgets its entry. The caller holds the write lock.
func (c *clockMemo[K, V]) drop(i int) {
	e := c.ring[i]
	delete(c.m, e.k)
	c.ring[i] = nil
	c.free = append(c.free, i)
	c.used -= e.cost
}

// clear drops every entry.
func (c *clockMemo[K, V]) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.m)
	c.ring, c.free, c.hand, c.used = nil, nil, 0, 0
}

func (c *clockMemo[K, V]) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}

// maxBuckets bounds each table of failure buckets.
const maxBuckets = 10000

// bucketTable holds a token bucket of failures per key, created at a key's
// first failure. It is bounded: when full, buckets that have refilled
// (indistinguishable from a new one) are dropped; if none has, an
// arbitrary one is, which at worst gives that key a fresh burst.
type bucketTable[K comparable] struct {
	limit Limit
	size  int
	mu    sync.Mutex
	m     map[K]*rate.Limiter
}

func newBucketTable[K comparable](l Limit, size int) *bucketTable[K] {
	return &bucketTable[K]{limit: l, size: size, m: make(map[K]*rate.Limiter)}
}

// wait returns how long until k may fail again: 0 when it has a token.
func (t *bucketTable[K]) wait(k K, now time.Time) time.Duration {
	t.mu.Lock()
	l := t.m[k]
	t.mu.Unlock()
	if l == nil {
		return 0
	}
	return untilToken(l, now)
}

// fail takes a token from k's bucket; concurrent failures may leave it in
// debt, which only makes the wait longer.
func (t *bucketTable[K]) fail(k K, now time.Time) {
	t.mu.Lock()
	l := t.m[k]
	if l == nil {
		if len(t.m) >= t.size {
			t.evict(now)
		}
		l = rate.NewLimiter(rate.Limit(t.limit.PerSecond), t.limit.Burst)
		t.m[k] = l
	}
	t.mu.Unlock()
	l.ReserveN(now, 1)
}

func (t *bucketTable[K]) evict(now time.Time) {
	for k, l := range t.m {
		if l.TokensAt(now) >= float64(t.limit.Burst) {
			delete(t.m, k)
		}
	}
	if len(t.m) < t.size {
		return
	}
	for k := range t.m {
		delete(t.m, k)
		return
	}
}

// untilToken returns how long until l holds a whole token (0 if it does).
func untilToken(l *rate.Limiter, now time.Time) time.Duration {
	tokens := l.TokensAt(now)
	if tokens >= 1 {
		return 0
	}
	return time.Duration((1 - tokens) / float64(l.Limit()) * float64(time.Second))
}

// newTenantLimiter returns the limiter of a tenant's requests, nil for no
// limit.
func newTenantLimiter(l Limit) *rate.Limiter {
	if l.PerSecond <= 0 {
		return nil
	}
	return rate.NewLimiter(rate.Limit(l.PerSecond), max(l.Burst, 1))
}

// allowTenant takes a token from a tenant's limiter, or returns how long
// until one is there.
func allowTenant(l *rate.Limiter, now time.Time) (wait time.Duration) {
	if l.AllowN(now, 1) {
		return 0
	}
	return max(untilToken(l, now), time.Millisecond)
}

// retryAfter formats a wait as Retry-After seconds, rounded up, at least 1.
func retryAfter(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}
