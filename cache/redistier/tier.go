package redistier

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"

	"listingproxy/cache"
)

// Defaults for the zero fields of Options (docs/configuration.md lists
// them; TestDocumentedSharedDefaults checks it).
const (
	DefaultKeyPrefix     = "listingproxy:"
	DefaultMaxEntryBytes = 8 << 20
	DefaultTimeout       = 50 * time.Millisecond
	// DefaultLease is half of cache.DefaultFillTimeout: a replica that
	// waited on a filler that died takes its lease with time left to
	// fill.
	DefaultLease = 5 * time.Second
	// DefaultCloseFlush is how long Close tries to record pending purges:
	// well within a deployment's usual termination grace (30s), long
	// enough for a Redis that is merely slow.
	DefaultCloseFlush = 5 * time.Second
	// DefaultBreakerFailures failed operations in a row open the breaker
	// for DefaultBreakerOpenFor.
	DefaultBreakerFailures = 5
	DefaultBreakerOpenFor  = 2 * time.Second
)

// Options configures a Tier. The zero value is usable.
type Options struct {
	// KeyPrefix starts every key and channel. Default DefaultKeyPrefix.
	KeyPrefix string
	// MaxEntryBytes bounds an entry's stored value (body, gzip form and
	// the few fields around them); larger entries are not written, and a
	// larger value found in Redis is not read. Default
	// DefaultMaxEntryBytes (8 MiB).
	MaxEntryBytes int64
	// Timeout bounds one Redis operation. Default DefaultTimeout (50ms).
	Timeout time.Duration
	// Lease is how long a fill lease lasts; keep it shorter than the
	// cache's fill timeout. Default DefaultLease (5s).
	Lease time.Duration
	// MaxRecords bounds the records of purges by tags kept in Redis;
	// past it the records closest to expiry are folded into purges of
	// their tenants. Default cache.DefaultMaxRecords (100,000), the
	// bound of a process's own table.
	MaxRecords int
	// Logger receives breaker state changes and subscription trouble.
	// Default: discard.
	Logger *slog.Logger
	// CloseFlush bounds how long Close goes on recording the purges
	// still pending (see Tier.Purge) before it gives them up. Default
	// DefaultCloseFlush (5s).
	CloseFlush time.Duration
	// Observe, when set, is called after every Redis operation with its
	// name (get, claim, set, abandon, drop, purge, covering, sync), duration and
	// error (nil for success and for a miss): the metrics hook.
	Observe func(op string, d time.Duration, err error)
}

// Stats is a snapshot of plain counters since New.
type Stats struct {
	// Hits and Misses count Gets answered with an entry or without one;
	// Errors counts operations that failed (timeouts, Redis down, the
	// breaker open).
	Hits, Misses, Errors uint64
	// Sets counts entries written; Oversize those too large to write,
	// and values too large found in Redis (not read).
	Sets, Oversize uint64
	// Damaged counts entries read whose checksum or structure was
	// wrong: each was a miss, never served.
	Damaged uint64
	// LeaseWaits counts Claims that found another process filling and
	// waited; PeerFills those that received its entry.
	LeaseWaits, PeerFills uint64
	// PurgesSent counts purges recorded; PurgesReceived those delivered
	// from the subscription (this process's own included).
	PurgesSent, PurgesReceived uint64
	// PurgesPending is the number of purges applied here and not yet
	// recorded for the fleet: the tier retries them until they are.
	PurgesPending int64
	// Slow counts operations a caller stopped waiting for at
	// Options.Timeout; each went on to its own end, and only a failure
	// there counts in Errors.
	Slow uint64
	// BreakerOpen is true while the breaker refuses operations.
	BreakerOpen bool
	// Synced is true once every purge recorded in Redis has been read
	// since the subscription last (re)started; until then Get answers
	// every read with a miss (see Tier.Synced).
	Synced bool
}

// Tier is the Redis second tier and generations. Create it with New, hand
// it to cache.New as both Options.SecondTier and Options.Generations, and
// Close it after the cache.
type Tier struct {
	rdb     redis.UniversalClient
	prefix  string
	maxSize int64
	timeout time.Duration
	lease   time.Duration
	// deadline bounds one operation, which a caller waits for at most
	// timeout (see call).
	deadline time.Duration
	// maxRecords bounds the tags hash (Options.MaxRecords).
	maxRecords int
	log        *slog.Logger
	observe    func(string, time.Duration, error)
	cb         *gobreaker.CircuitBreaker[any]

	filledCh, purgeCh, gensKey, epochKey string
	tagsKey, tagsExpKey                  string

	mu      sync.Mutex
	waiters map[string][]chan note // by entry ID
	holding map[string]string      // entry ID -> our lease token
	apply   func(cache.Purge)

	stop       context.CancelFunc
	done       chan struct{}
	subscribed chan struct{} // closed at the first subscription
	subOnce    sync.Once
	// synced: every recorded purge has been read since the subscription
	// last (re)started (see Synced).
	synced atomic.Bool

	hits, misses, errs, sets, oversize, damaged, slow atomic.Uint64
	leaseWaits, peerFills, purgesSent, purgesIn       atomic.Uint64

	// pending counts purges not recorded in Redis yet: being recorded, or
	// in retryQ (see requeue).
	pending     atomic.Int64
	retryMu     sync.Mutex
	retryQ      map[string]pendingPurge // by field(p)
	retrySeq    uint64
	retryStop   context.CancelFunc // nil until the first requeue
	retryClosed bool               // Close has run: no more retries start
	closeFlush  time.Duration      // Options.CloseFlush
	retryDone   chan struct{}
	retryKick   chan struct{}
}

// note is what a waiting Claim hears about a fill: written (an entry was
// written: read it), failed, or neither (the filler dropped its result or
// could not write it, or Redis went away: claim again).
type note struct {
	written bool
	failed  string // the filler's error
}

// New returns a Tier on rdb. It subscribes to the fleet's notifications
// when cache.New calls Watch.
func New(rdb redis.UniversalClient, o Options) *Tier {
	if o.KeyPrefix == "" {
		o.KeyPrefix = DefaultKeyPrefix
	}
	if o.MaxEntryBytes <= 0 {
		o.MaxEntryBytes = DefaultMaxEntryBytes
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.MaxRecords <= 0 {
		o.MaxRecords = cache.DefaultMaxRecords
	}
	if o.CloseFlush <= 0 {
		o.CloseFlush = DefaultCloseFlush
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	t := &Tier{
		closeFlush: o.CloseFlush,
		rdb:        rdb, prefix: o.KeyPrefix, maxSize: o.MaxEntryBytes, timeout: o.Timeout, lease: o.Lease,
		maxRecords: o.MaxRecords, deadline: deadline(o.Timeout),
		log: o.Logger, observe: o.Observe,
		filledCh: o.KeyPrefix + "filled", purgeCh: o.KeyPrefix + "purge",
		gensKey: o.KeyPrefix + "{gens}", epochKey: o.KeyPrefix + "{gens}:epoch",
		tagsKey: o.KeyPrefix + "{gens}:tags", tagsExpKey: o.KeyPrefix + "{gens}:tags:exp",
		waiters: map[string][]chan note{}, holding: map[string]string{},
		done: make(chan struct{}), subscribed: make(chan struct{}),
	}
	t.cb = gobreaker.NewCircuitBreaker[any](gobreaker.Settings{
		Name:        "redis",
		MaxRequests: 1,
		Timeout:     DefaultBreakerOpenFor,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= DefaultBreakerFailures },
		OnStateChange: func(_ string, from, to gobreaker.State) {
			t.log.Warn("redistier: breaker state change", "from", from.String(), "to", to.String())
			if to == gobreaker.StateOpen {
				t.wakeAll()
			}
		},
	})
	return t
}

// Stats returns the current counters.
func (t *Tier) Stats() Stats {
	return Stats{
		Hits: t.hits.Load(), Misses: t.misses.Load(), Errors: t.errs.Load(),
		Sets: t.sets.Load(), Oversize: t.oversize.Load(), Damaged: t.damaged.Load(),
		LeaseWaits: t.leaseWaits.Load(), PeerFills: t.peerFills.Load(),
		PurgesSent: t.purgesSent.Load(), PurgesReceived: t.purgesIn.Load(),
		BreakerOpen:   t.cb.State() == gobreaker.StateOpen,
		Synced:        t.synced.Load(),
		PurgesPending: t.pending.Load(), Slow: t.slow.Load(),
	}
}

// Synced reports whether the tier has read every purge recorded in Redis
// since its subscription last (re)started. Until it has, an entry in
// Redis may be one that a purge it has not read covers, so Get answers
// with a miss (the flight loads, and its fill is written through as
// usual); first-tier entries are not affected.
func (t *Tier) Synced() bool { return t.synced.Load() }

// Subscribed is closed once the tier listens to the fleet (its first
// subscription, and the recorded purges read): from then on it hears
// other processes' fills and purges.
func (t *Tier) Subscribed() <-chan struct{} { return t.subscribed }

// Close stops the subscription and the retries of pending purges (a
// purge still pending is lost with the process, and logged). Close the
// cache first.
func (t *Tier) Close() {
	t.mu.Lock()
	stop := t.stop
	t.mu.Unlock()
	if stop != nil {
		stop()
		<-t.done
	}
	t.retryMu.Lock()
	rstop, rdone := t.retryStop, t.retryDone
	t.retryClosed = true
	t.retryMu.Unlock()
	if rstop != nil {
		rstop()
		<-rdone
	}
	if t.pending.Load() > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), t.closeFlush)
		t.flushPending(ctx)
		cancel()
	}
	if n := t.pending.Load(); n > 0 {
		t.log.Warn("redistier: purges not recorded for the fleet at close: the other replicas keep the purged entries until they expire or are purged again", "pending", n, "tried_for", t.closeFlush)
	}
}

// errSlow is what a caller hears when Redis has not answered within
// Options.Timeout: it goes on without (a miss, a local load, a purge
// pending) while the operation itself runs on to its deadline.
var errSlow = errors.New("no answer within the timeout (the operation goes on)")

// deadline is how long one Redis operation may run before it counts as a
// failure (errors, the breaker): four times timeout, at least a second.
func deadline(timeout time.Duration) time.Duration { return max(4*timeout, time.Second) }

// exec runs one Redis operation through the breaker, within the
// operation's deadline (see call). redis.Nil is a result, not a failure.
func exec[T any](t *Tier, ctx context.Context, op string, f func(ctx context.Context) (T, error)) (T, error) {
	start := time.Now()
	var v T
	_, err := t.cb.Execute(func() (any, error) {
		ctx, cancel := context.WithTimeout(ctx, t.deadline)
		defer cancel()
		var err error
		v, err = f(ctx)
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, err
		}
		return nil, nil
	})
	if err != nil {
		t.errs.Add(1)
		err = fmt.Errorf("redistier: %s: %w", op, err)
	}
	if t.observe != nil {
		t.observe(op, time.Since(start), err)
	}
	return v, err
}

// call runs one Redis operation (exec) and waits for it at most
// Options.Timeout (or until ctx ends): a caller on a request's path
// never waits longer, but the operation runs on, detached, to its own
// deadline, and only its own outcome counts as a success or a failure.
// On a loaded machine a goroutine may be scheduled tens of milliseconds
// late; a bound on the whole operation then failed answers that Redis
// had sent in time, and opened the breaker on a healthy Redis. So the
// wait is the request's bound and the breaker counts what Redis did.
// then, when not nil, runs with the operation's outcome when it ends,
// and late: true when the caller had stopped waiting (so that, say, a
// lease taken after its claimer gave up is released). This is
// hand-written because go-redis has one deadline per command, and the
// two bounds must differ.
func call[T any](t *Tier, ctx context.Context, op string, f func(ctx context.Context) (T, error), then func(v T, err error, late bool)) (T, error) {
	if t.cb.State() == gobreaker.StateOpen { // refused at once: no goroutine
		v, err := exec(t, ctx, op, f)
		if then != nil {
			then(v, err, false)
		}
		return v, err
	}
	type result struct {
		v   T
		err error
	}
	res := make(chan result, 1)
	// state: 0 running, 1 answered (the caller takes the result), 2 the
	// caller gave up. Whoever moves it from 0 decides.
	var state atomic.Int32
	go func() {
		v, err := exec(t, context.WithoutCancel(ctx), op, f)
		res <- result{v, err}
		late := !state.CompareAndSwap(0, 1)
		if then != nil {
			then(v, err, late)
		}
	}()
	wait := time.NewTimer(t.timeout)
	defer wait.Stop()
	select {
	case r := <-res:
		return r.v, r.err
	case <-wait.C:
	case <-ctx.Done():
	}
	if !state.CompareAndSwap(0, 2) { // answered meanwhile: the result is there
		r := <-res
		return r.v, r.err
	}
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, fmt.Errorf("redistier: %s: %w", op, err)
	}
	t.slow.Add(1)
	return zero, fmt.Errorf("redistier: %s: %w", op, errSlow)
}

// do is call for operations without a result.
func (t *Tier) do(ctx context.Context, op string, f func(ctx context.Context) error, then func(error)) error {
	var th func(struct{}, error, bool)
	if then != nil {
		th = func(_ struct{}, err error, _ bool) { then(err) }
	}
	_, err := call(t, ctx, op, func(ctx context.Context) (struct{}, error) { return struct{}{}, f(ctx) }, th)
	return err
}

// id names k's entry: a SHA-256 of every field, length-prefixed.
func id(k cache.Key) string {
	h := sha256.New()
	for _, f := range [...]string{k.Tenant, k.Resource, k.Scope, k.Variant} {
		h.Write(strconv.AppendInt(nil, int64(len(f)), 10))
		h.Write([]byte{':'})
		h.Write([]byte(f))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

func (t *Tier) entryKey(id string) string { return t.prefix + "e:{" + id + "}" }
func (t *Tier) leaseKey(id string) string { return t.prefix + "l:{" + id + "}" }

// Get implements cache.SecondTier. Until the tier is Synced every read is
// a miss.
func (t *Tier) Get(ctx context.Context, k cache.Key) (*cache.Entry, uint64, error) {
	if !t.synced.Load() {
		t.misses.Add(1)
		return nil, 0, nil
	}
	return t.get(ctx, k)
}

// get reads k's entry whether or not the tier is synced: Claim's read of
// the entry a peer has just filled (after the purges that cover it, which
// its fill checked with Covering).
func (t *Tier) get(ctx context.Context, k cache.Key) (*cache.Entry, uint64, error) {
	eid := id(k)
	// At most one byte more than the bound: a larger value is not read
	// whole (GETRANGE rather than a script that checks the length first:
	// copying a 45 KB value through Lua costs Redis some 80 µs of its one
	// thread, GETRANGE under 3).
	raw, err := call(t, ctx, "get", func(ctx context.Context) ([]byte, error) {
		return t.rdb.GetRange(ctx, t.entryKey(eid), 0, t.maxSize).Bytes()
	}, nil)
	if err != nil {
		return nil, 0, err
	}
	if int64(len(raw)) > t.maxSize {
		t.oversize.Add(1)
		t.misses.Add(1)
		t.log.Warn("redistier: entry larger than max_entry_bytes not read; dropped", "tenant", k.Tenant, "resource", k.Resource, "id", eid, "max", t.maxSize)
		// Dropped, so that it is not read again on every miss of its key.
		_ = t.do(ctx, "drop", func(ctx context.Context) error {
			return dropScript.Run(ctx, t.rdb, []string{t.entryKey(eid)}, t.maxSize).Err()
		}, nil)
		return nil, 0, nil
	}
	if len(raw) == 0 { // GETRANGE of a missing key is ""
		raw = nil
	}
	if raw == nil {
		t.misses.Add(1)
		return nil, 0, nil
	}
	e, gen, err := decode(raw, k)
	if err != nil {
		t.damaged.Add(1)
		t.misses.Add(1)
		t.log.Warn("redistier: damaged entry not served", "tenant", k.Tenant, "resource", k.Resource, "id", eid, "bytes", len(raw), "err", err)
		return nil, 0, nil
	}
	if e == nil {
		t.misses.Add(1)
		return nil, 0, nil
	}
	t.hits.Add(1)
	return e, gen, nil
}

// TierName implements cache.InspectableTier.
func (t *Tier) TierName() string { return "shared" }

// Peek implements cache.InspectableTier: k's entry as get reads it, synced
// or not, counted in no statistic (an oversized or damaged value is
// reported, not dropped).
func (t *Tier) Peek(ctx context.Context, k cache.Key) (*cache.Entry, uint64, error) {
	eid := id(k)
	raw, err := call(t, ctx, "peek", func(ctx context.Context) ([]byte, error) {
		return t.rdb.GetRange(ctx, t.entryKey(eid), 0, t.maxSize).Bytes()
	}, nil)
	switch {
	case err != nil:
		return nil, 0, err
	case len(raw) == 0:
		return nil, 0, nil
	case int64(len(raw)) > t.maxSize:
		return nil, 0, fmt.Errorf("redistier: entry larger than max_entry_bytes (%d), never served", t.maxSize)
	}
	return decode(raw, k)
}

// dropScript deletes an entry larger than the bound (still larger: not
// one written since). KEYS: entry; ARGV: the bound.
var dropScript = redis.NewScript(`
if redis.call('STRLEN', KEYS[1]) > tonumber(ARGV[1]) then redis.call('DEL', KEYS[1]) end
return 1`)

// Claim implements cache.SecondTier: take k's fill lease, or wait for the
// process that holds it.
func (t *Tier) Claim(ctx context.Context, k cache.Key) (*cache.Entry, uint64, error) {
	eid := id(k)
	waited := false
	for {
		ch := t.register(eid)
		token := rand.Text()
		type claimed struct {
			took bool
			left time.Duration
		}
		c, err := call(t, ctx, "claim", func(ctx context.Context) (c claimed, err error) {
			c.took, err = t.rdb.SetNX(ctx, t.leaseKey(eid), token, t.lease).Result()
			if err == nil && !c.took {
				c.left, err = t.rdb.PTTL(ctx, t.leaseKey(eid)).Result()
			}
			return c, err
		}, func(c claimed, err error, late bool) {
			if late && err == nil && c.took { // taken after we gave up and loaded: free it
				t.release(context.WithoutCancel(ctx), eid, token, eid+" retry")
			}
		})
		took, left := c.took, c.left
		if err != nil || took {
			t.unregister(eid, ch)
			if took {
				t.mu.Lock()
				t.holding[eid] = token
				t.mu.Unlock()
			}
			return nil, 0, nil // load: holding the lease, or Redis cannot coordinate
		}
		switch {
		case left == -1: // a lease without expiry (not ours to write): try again after a lease
			left = t.lease
		case left <= 0: // the lease expired between SETNX and PTTL (-2: no key): claim again now
			t.unregister(eid, ch)
			continue
		}
		if !waited {
			waited = true
			t.leaseWaits.Add(1)
		}
		// Wait for the filler's note, re-checking the lease now and then:
		// a lease that went without a note reaching us (deleted, or its
		// holder's release lost) is claimed at the next check rather
		// than at its expiry.
		timer := time.NewTimer(min(left, t.recheck()))
		select {
		case n := <-ch:
			timer.Stop()
			if n.failed != "" {
				return nil, 0, fmt.Errorf("redistier: the fill on another replica failed: %s", n.failed)
			}
			if !n.written {
				continue // claim again
			}
			if e, gen, err := t.get(ctx, k); err == nil && e != nil {
				t.peerFills.Add(1)
				return e, gen, nil
			}
		case <-timer.C: // re-check the lease: expired, gone, or still held
			t.unregister(eid, ch)
		case <-ctx.Done():
			timer.Stop()
			t.unregister(eid, ch)
			return nil, 0, ctx.Err()
		}
	}
}

// recheck is how often a waiting Claim re-checks the lease it waits on: a
// fifth of the lease, between 100ms and 1s.
func (t *Tier) recheck() time.Duration {
	return min(max(t.lease/5, 100*time.Millisecond), time.Second)
}

func (t *Tier) register(eid string) chan note {
	ch := make(chan note, 1)
	t.mu.Lock()
	t.waiters[eid] = append(t.waiters[eid], ch)
	t.mu.Unlock()
	return ch
}

func (t *Tier) unregister(eid string, ch chan note) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ws := t.waiters[eid]
	for i, w := range ws {
		if w == ch {
			ws = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(t.waiters, eid)
	} else {
		t.waiters[eid] = ws
	}
}

// wakeAll wakes every waiting Claim to claim again: Redis has gone (the
// subscription broke, or the breaker opened), so the fill they wait for
// may never be announced; their next claim fails fast and they load.
func (t *Tier) wakeAll() {
	t.mu.Lock()
	ws := t.waiters
	t.waiters = map[string][]chan note{}
	t.mu.Unlock()
	for _, chs := range ws {
		for _, w := range chs {
			w <- note{}
		}
	}
}

// notify wakes every Claim waiting for eid.
func (t *Tier) notify(eid string, n note) {
	t.mu.Lock()
	ws := t.waiters[eid]
	delete(t.waiters, eid)
	t.mu.Unlock()
	for _, w := range ws {
		w <- n
	}
}

// releaseScript drops the lease if it is still ours and tells the fleet.
// KEYS: lease; ARGV: token, channel, message.
var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 1`)

func (t *Tier) token(eid string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	tok := t.holding[eid]
	delete(t.holding, eid)
	return tok
}

// Set implements cache.SecondTier.
func (t *Tier) Set(ctx context.Context, k cache.Key, gen uint64, e *cache.Entry, ttl time.Duration) {
	eid := id(k)
	val := encode(k, gen, e)
	if int64(len(val)) > t.maxSize {
		t.oversize.Add(1)
		t.Abandon(ctx, k, nil)
		return
	}
	tok := t.token(eid)
	// The write, the lease's release and the notice in one transaction
	// (MULTI/EXEC: the two keys share a hash slot). Not one script: a
	// value copied through Lua costs Redis over 100 µs of its one thread
	// for a 45 KB entry, SET about 5 (bench/NOTES.md). EVAL, not EVALSHA:
	// inside MULTI a script missing from Redis's cache could not be
	// loaded and retried.
	_ = t.do(ctx, "set", func(ctx context.Context) error {
		_, err := t.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, t.entryKey(eid), val, ttl+time.Millisecond)
			releaseScript.Eval(ctx, p, []string{t.leaseKey(eid)}, tok, t.filledCh, eid+" ok")
			return nil
		})
		return err
	}, func(err error) {
		if err == nil {
			t.sets.Add(1)
			return
		}
		// The write failed (or its answer was lost): release the lease
		// if it is still ours and tell the waiters to claim again, so
		// that they do not wait out the lease. (If the write did happen,
		// the lease is gone already: the waiters find it free, claim it
		// and load once more, never more than one call per replica.)
		t.release(context.WithoutCancel(ctx), eid, tok, eid+" retry")
	})
}

// Abandon implements cache.SecondTier.
func (t *Tier) Abandon(ctx context.Context, k cache.Key, failed error) {
	eid := id(k)
	msg := eid + " retry"
	if failed != nil {
		msg = eid + " fail " + strings.ReplaceAll(failed.Error(), "\n", " ")
	}
	t.release(ctx, eid, t.token(eid), msg)
}

// release drops eid's lease if it is still tok, and publishes msg.
func (t *Tier) release(ctx context.Context, eid, tok, msg string) {
	_ = t.do(ctx, "abandon", func(ctx context.Context) error {
		return releaseScript.Run(ctx, t.rdb, []string{t.leaseKey(eid)}, tok, t.filledCh, msg).Err()
	}, nil)
}

// ClientOptions say how to reach Redis (config builds them from
// cache.shared).
type ClientOptions struct {
	// Addrs: one address for a standalone server, several for a cluster,
	// the Sentinels' with MasterName.
	Addrs              []string
	MasterName         string
	Username, Password string
	DB                 int
	// TLS: with TLSEnabled, CAFile (default the system roots),
	// CertFile and KeyFile (mutual TLS), ServerName (default the host).
	TLSEnabled                            bool
	CAFile, CertFile, KeyFile, ServerName string
	// Timeout bounds dialing and each read and write. Default
	// DefaultTimeout.
	Timeout time.Duration
}

// Dial returns a client for o: standalone, cluster or Sentinel as
// redis.NewUniversalClient decides from Addrs and MasterName. It does not
// connect: the first operation does.
func Dial(o ClientOptions) (redis.UniversalClient, error) {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	uo := &redis.UniversalOptions{
		Addrs: o.Addrs, MasterName: o.MasterName, Username: o.Username, Password: o.Password, DB: o.DB,
		// Timeouts are the tier's per-operation deadline (a caller waits
		// at most o.Timeout, see call); retries are its breaker's
		// business.
		DialTimeout: max(o.Timeout, 200*time.Millisecond), ReadTimeout: deadline(o.Timeout), WriteTimeout: deadline(o.Timeout),
		ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1,
	}
	if o.TLSEnabled {
		tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: o.ServerName}
		if o.CAFile != "" {
			pem, err := os.ReadFile(o.CAFile)
			if err != nil {
				return nil, fmt.Errorf("redistier: tls ca_file: %w", err)
			}
			tc.RootCAs = x509.NewCertPool()
			if !tc.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("redistier: tls ca_file %s: no PEM certificate", o.CAFile)
			}
		}
		if o.CertFile != "" {
			c, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
			if err != nil {
				return nil, fmt.Errorf("redistier: tls client certificate: %w", err)
			}
			tc.Certificates = []tls.Certificate{c}
		}
		uo.TLSConfig = tc
	}
	return redis.NewUniversalClient(uo), nil
}
