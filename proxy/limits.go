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
type clockMemo[V any] struct {
	mu   sync.RWMutex
	m    map[[32]byte]*clockEntry[V]
	ring [][32]byte // keys by slot; the hand walks it
	hand int
	max  int
}

type clockEntry[V any] struct {
	v    V
	used atomic.Bool
}

func newClockMemo[V any](size int) *clockMemo[V] {
	return &clockMemo[V]{m: make(map[[32]byte]*clockEntry[V]), max: max(size, 1)}
}

func (c *clockMemo[V]) get(k [32]byte) (V, bool) {
	c.mu.RLock()
	e := c.m[k]
	c.mu.RUnlock()
	if e == nil {
		var zero V
		return zero, false
	}
	if !e.used.Load() { // a store only when needed: no cache-line churn on hits
		e.used.Store(true)
	}
	return e.v, true
}

func (c *clockMemo[V]) put(k [32]byte, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m[k] != nil {
		return // an entry is immutable once published (readers hold it unlocked); the old one is as good
	}
	if len(c.ring) < c.max {
		c.ring = append(c.ring, k)
		c.m[k] = &clockEntry[V]{v: v}
		return
	}
	for {
		old := c.m[c.ring[c.hand]]
		if old.used.Load() {
			old.used.Store(false)
			c.hand = (c.hand + 1) % c.max
			continue
		}
		delete(c.m, c.ring[c.hand])
		c.ring[c.hand] = k
		c.m[k] = &clockEntry[V]{v: v}
		c.hand = (c.hand + 1) % c.max
		return
	}
}

func (c *clockMemo[V]) len() int {
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

func (t *bucketTable[K]) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
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
