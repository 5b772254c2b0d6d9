package proxy

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"maps"
	"math"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"
	"golang.org/x/sync/semaphore"
	"golang.org/x/sync/singleflight"
	"golang.org/x/time/rate"

	"listingproxy/clientip"
)

// Permissions is a user's permission set.
type Permissions uint8

// The permissions.
const (
	// PermFull allows full detail.
	PermFull Permissions = 1 << iota
	// PermPrices adds the raw price_from/price_to to full detail.
	PermPrices
)

// String returns the canonical form used in cache keys: "none", "full",
// "prices" or "full+prices".
func (p Permissions) String() string {
	switch p & (PermFull | PermPrices) {
	case PermFull:
		return "full"
	case PermPrices:
		return "prices"
	case PermFull | PermPrices:
		return "full+prices"
	}
	return "none"
}

// User is an API user: Basic credentials bound to one tenant.
type User struct {
	Username     string
	PasswordHash []byte // bcrypt
	Tenant       string // key into the Server's tenants
	Permissions  Permissions
	// Compat, when set, are the user's own compatibility switches, in
	// place of its tenant's: one tenant's client programs often need
	// different ones (docs/api.md, compatibility switches). Nil: the
	// tenant's.
	Compat *Compat
}

// Compat are the compatibility switches of a caller's JSON bodies
// (docs/api.md). The zero value: none, the spec's shapes.
type Compat struct {
	// SingleObject renders a JSON collection of exactly one item as that
	// object rather than a one-element array; SingleObjectItems limits it
	// to the collections of the named items ("property").
	SingleObject      bool
	SingleObjectItems map[string]bool
	// NumericIDs writes ids as JSON numbers.
	NumericIDs bool
	// VideoURL writes a CRM's videos as objects with a "url".
	VideoURL bool
}

// key is c's canonical name in a cache key: "" for no switch, else the
// switches on, in a fixed order, so that every replica of a fleet names a
// set alike and bodies made under one set are never served to a caller
// with another.
func (c *Compat) key() string {
	var parts []string
	if c.SingleObject {
		parts = append(parts, "single_object")
	}
	if len(c.SingleObjectItems) > 0 {
		parts = append(parts, "single_object_items="+strings.Join(slices.Sorted(maps.Keys(c.SingleObjectItems)), "+"))
	}
	if c.NumericIDs {
		parts = append(parts, "numeric_ids")
	}
	if c.VideoURL {
		parts = append(parts, "video_url")
	}
	return strings.Join(parts, ",")
}

// compatOf is the switches of u: its own, else its tenant's.
func compatOf(u *User, t *Tenant) Compat {
	if u.Compat != nil {
		return *u.Compat
	}
	return Compat{SingleObject: t.JSONSingleObject, SingleObjectItems: t.JSONSingleObjectItems, NumericIDs: t.JSONNumericIDs, VideoURL: t.JSONVideoURL}
}

// principal is an authenticated caller.
type principal struct {
	username string
	tenant   *Tenant
	perms    Permissions
	// variant is the cache-key prefix of this caller: permissions; the
	// tenant is a separate part of the key.
	variant string
	// compat is the caller's compatibility switches, compatKey their name
	// in the key of a JSON body ("" for none).
	compat    Compat
	compatKey string
}

// Limit is a token bucket: PerSecond tokens a second on average, at most
// Burst at once. The zero Limit means no limit where a limit is optional.
type Limit struct {
	PerSecond float64
	Burst     int
}

// AuthOptions bound what authentication may cost. The zero value works
// with the defaults below.
type AuthOptions struct {
	// Workers is how many bcrypt checks of not-yet-verified credentials run
	// at once. Default: one less than GOMAXPROCS, at least 1, so that
	// verified callers always find a CPU.
	Workers int
	// Queue is how many checks may wait for a worker; past it a request
	// gets 429 without a check. Default 8.
	Queue int
	// ChecksPerSecond bounds the checks started a second, in a token
	// bucket with a second's burst; past it a request gets 429 (pool
	// full) without a check. Workers bounds how many CPUs bcrypt may
	// take; this bounds how much of them, which matters when Workers is
	// already 1 (on 2 CPUs, one busy worker is half the machine). Default
	// 10 (at bcrypt cost 10, about half of one CPU); negative: no bound.
	ChecksPerSecond float64
	// AddressFailures and UsernameFailures are token buckets of failed
	// checks per client address (IPv6: per /64) and per username (known
	// or not); an attempt that finds its bucket empty gets 429 without a
	// check. Defaults: 30 a minute, burst 10; 10 a minute, burst 5.
	AddressFailures  Limit
	UsernameFailures Limit
	// VerifiedEntries bounds the verified credentials remembered. Default
	// 10000.
	VerifiedEntries int
	// ClientIP finds the client address of a request for AddressFailures.
	// The zero value uses the TCP peer.
	ClientIP clientip.Resolver
	// RefusalDelay holds a 429 of authentication (throttled, pool full)
	// this long before it is sent, so that a client flooding bad
	// credentials waits instead of spending the CPU of legitimate callers
	// on refusals. It costs a parked goroutine, no CPU. Default 1s;
	// negative: none.
	RefusalDelay time.Duration
	// Compare checks a password against its hash. Default
	// bcrypt.CompareHashAndPassword; tests replace it to count or hold
	// checks.
	Compare func(hash, password []byte) error
}

// Defaults of AuthOptions, the one place they are stated
// (docs/configuration.md lists them; cmd's TestDocumentedDefaults checks).
const (
	DefaultAuthQueue       = 8
	DefaultVerifiedEntries = 10000
	DefaultRefusalDelay    = time.Second
	DefaultChecksPerSecond = 10
	// failedEntries bounds the remembered failed headers; they live apart
	// from verified ones, so a flood of bad headers evicts only bad ones.
	failedEntries = 4096
	// maxHeader and maxPassword bound what is ever hashed: no Basic header
	// of a configured user is longer, and bcrypt ignores bytes past 72
	// (accepting them would give one password endless spellings).
	maxHeader   = 1024
	maxPassword = 72
	// minUsernameBound is the shortest limit on usernames looked up: the
	// config's own limit on a username's length.
	minUsernameBound = 64
)

// Default failure buckets of AuthOptions: 30 a minute, burst 10, per
// address; 10 a minute, burst 5, per username.
var (
	DefaultAddressFailures  = Limit{PerSecond: 30.0 / 60, Burst: 10}
	DefaultUsernameFailures = Limit{PerSecond: 10.0 / 60, Burst: 5}
)

// denial is why a request was not authenticated: its metric reason, and
// for a 429 when to retry.
type denial struct {
	reason     string // one of the Reject* constants
	retryAfter time.Duration
}

// Reasons an API request is refused before it reaches a handler, as
// RequestInfo.Rejection reports them.
const (
	RejectMissing     = "missing"         // no Authorization header: 401
	RejectBad         = "bad_credentials" // malformed or wrong credentials: 401
	RejectThrottled   = "throttled"       // too many failures from the address or for the username: 429
	RejectPoolFull    = "pool_full"       // too many unverified checks at once: 429
	RejectTenantLimit = "tenant_limit"    // the tenant's rate limit: 429
)

// authGuard is what bounds authentication across reloads: the bcrypt pool
// and the failure buckets outlive an authenticator.
type authGuard struct {
	now       func() time.Time
	clientIP  clientip.Resolver
	admit     *semaphore.Weighted // a slot per worker and per queue place
	checks    *rate.Limiter       // checks started a second; nil: no bound
	work      *semaphore.Weighted // a slot per worker
	addresses *bucketTable[netip.Addr]
	usernames *bucketTable[string]
	verified  int // memo size of each authenticator
	compare   func(hash, password []byte) error
	delay     time.Duration // RefusalDelay
}

func newAuthGuard(o AuthOptions, now func() time.Time) *authGuard {
	workers := o.Workers
	if workers <= 0 {
		workers = max(1, runtime.GOMAXPROCS(0)-1)
	}
	queue := cmp.Or(max(o.Queue, 0), DefaultAuthQueue)
	g := &authGuard{
		now:       now,
		clientIP:  o.ClientIP,
		admit:     semaphore.NewWeighted(int64(workers + queue)),
		work:      semaphore.NewWeighted(int64(workers)),
		addresses: newBucketTable[netip.Addr](orLimit(o.AddressFailures, DefaultAddressFailures), maxBuckets),
		usernames: newBucketTable[string](orLimit(o.UsernameFailures, DefaultUsernameFailures), maxBuckets),
		verified:  cmp.Or(max(o.VerifiedEntries, 0), DefaultVerifiedEntries),
		compare:   o.Compare,
		delay:     max(cmp.Or(o.RefusalDelay, DefaultRefusalDelay), 0),
	}
	if cps := cmp.Or(o.ChecksPerSecond, DefaultChecksPerSecond); cps > 0 {
		g.checks = rate.NewLimiter(rate.Limit(cps), max(1, int(math.Ceil(cps))))
	}
	if g.compare == nil {
		g.compare = bcrypt.CompareHashAndPassword
	}
	return g
}

func orLimit(l, def Limit) Limit {
	if l.PerSecond <= 0 || l.Burst <= 0 {
		return def
	}
	return l
}

// check runs fn on a pool worker, waiting behind at most the queue; it
// reports false, without running fn, when the second's checks are spent or
// the queue is full. The wait is bounded by the queue's length times one
// check, so it needs no deadline.
func (g *authGuard) check(fn func()) bool {
	if g.checks != nil && !g.checks.AllowN(g.now(), 1) {
		return false
	}
	if !g.admit.TryAcquire(1) {
		return false
	}
	defer g.admit.Release(1)
	// Admitted, so at most the queue's length of checks is ahead.
	_ = g.work.Acquire(context.Background(), 1) // fails only when its context ends
	defer g.work.Release(1)
	fn()
	return true
}

// authenticator checks HTTP Basic credentials. A verified Authorization
// header is remembered under its SHA-256 (never the password), so it costs
// one hash and one lookup from then on, and never waits for anything
// unverified. The first check of a header runs bcrypt in the guard's pool,
// once for concurrent first uses of one header, unless the client address
// or the username has failed too often.
type authenticator struct {
	users   map[string]*User
	tenants map[string]*Tenant
	dummy   []byte // hash checked for unknown users, so timing does not reveal them
	maxName int    // longest username looked up; longer ones are refused unhashed
	guard   *authGuard

	// verified holds only credentials that passed, in their canonical
	// spelling, so only a password's holder can add to it; failed holds
	// recent failures, so a client repeating a wrong header costs no bcrypt.
	verified *clockMemo[[32]byte, *principal]
	failed   *clockMemo[[32]byte, struct{}]
	flight   singleflight.Group
}

func newAuthenticator(users []User, tenants map[string]*Tenant, g *authGuard) *authenticator {
	a := &authenticator{
		users:    make(map[string]*User, len(users)),
		tenants:  tenants,
		maxName:  minUsernameBound,
		guard:    g,
		verified: newClockMemo[[32]byte, *principal](g.verified),
		failed:   newClockMemo[[32]byte, struct{}](failedEntries),
	}
	for i := range users {
		u := users[i]
		a.users[u.Username] = &u
		a.maxName = max(a.maxName, len(u.Username))
		if a.dummy == nil {
			a.dummy = u.PasswordHash
		}
	}
	return a
}

// authenticate returns the caller of r, or why there is none.
func (a *authenticator) authenticate(r *http.Request) (*principal, denial) {
	h := r.Header["Authorization"]
	if len(h) == 0 {
		return nil, denial{reason: RejectMissing}
	}
	if p := a.known(r); p != nil {
		return p, denial{}
	}
	if len(h) != 1 || len(h[0]) > maxHeader {
		return a.slow(r, "", [32]byte{})
	}
	sum := headerSum(h[0])
	p, d := a.slow(r, h[0], sum)
	if cm, _ := r.Context().Value(connMemoKey{}).(*connMemo); p != nil && cm != nil {
		if e := a.verified.entry(sum); e != nil && e.v == p { // verified, and in its canonical spelling
			cm.remember(a, h[0], e)
		}
	}
	return p, d
}

// known is r's caller when a memo already holds r's Authorization header
// as verified by a: its connection's (connMemo), else the verified memo
// (which the connection's memo then remembers). Else nil, and nothing
// else is done: no bcrypt, no failure counted, so the front memo
// (Server.serveFront) may ask before the full path authenticates r.
func (a *authenticator) known(r *http.Request) *principal {
	h := r.Header["Authorization"]
	if len(h) != 1 || len(h[0]) > maxHeader {
		return nil
	}
	cm, _ := r.Context().Value(connMemoKey{}).(*connMemo)
	if p := a.connKnown(cm, h[0]); p != nil {
		return p
	}
	e := a.verified.entry(headerSum(h[0]))
	if e == nil {
		return nil
	}
	if cm != nil {
		cm.remember(a, h[0], e)
	}
	return e.v
}

// headerSum is the verified memo's key of an Authorization header of at
// most maxHeader bytes.
func headerSum(h string) [32]byte {
	var buf [maxHeader]byte // on the stack: []byte(h) would allocate a header longer than 32 bytes
	return sha256.Sum256(append(buf[:0], h...))
}

// connKnown is the caller whose header cm holds when it is header,
// verified by a; else nil.
func (a *authenticator) connKnown(cm *connMemo, header string) *principal {
	if cm == nil {
		return nil
	}
	if v := cm.last.Load(); v != nil && v.a == a && v.same(header) {
		v.e.touch()
		return v.p
	}
	return nil
}

// connMemo is a connection's memo of the Authorization header first
// verified on it (ConnContext), in its canonical spelling (the one the
// verified memo keeps): a client sends the same header with every
// request of a connection, and a request repeating it is authenticated by
// comparing the two strings, without the SHA-256 of the verified memo's
// key (~2,400 of a cache hit's ~60,000 instructions under callgrind,
// where SHA-NI is hidden; bench/NOTES.md, "hit path against bareproxy").
//
// It holds the header (a copy of its bytes, or as net/http gave it for
// the request that stored it when it is long) for as long as the
// connection lives, no longer than the connection's read buffer holds the
// same bytes, and never in a table shared between connections (the
// verified memo keeps only hashes). It is set once per connection and
// authenticator (a reload's new authenticator replaces it), never for a
// header that did not pass, so a connection whose requests alternate
// credentials (a proxy in front reusing its connections) checks the
// others as before, with no allocation per request. The comparison takes
// the same time whatever the bytes, so another client of such a shared
// connection learns nothing of the header held by timing its own.
type connMemo struct {
	last atomic.Pointer[connVerified]
	// first is the connection's first connVerified, held in this object
	// (the connection's memo is then one read, not two): filled once, by
	// the remember that claims it (taken), before last points to it.
	taken atomic.Bool
	first connVerified
}

// connVerified is what a connection's memo holds. A repeated request
// reads it alone on its way to its caller: the header's bytes are held in
// it when they fit (inline) and the caller is copied from the verified
// memo's entry (p), whose flag is set beside without the request waiting
// on it. Among many connections each of those was a cache line of its own
// read one after the other (bench/NOTES.md, "The hit's chain of cold
// reads").
type connVerified struct {
	a      *authenticator                    // the authenticator that verified header
	p      *principal                        // e.v
	e      *clockEntry[[32]byte, *principal] // its verified memo entry (marked used on each use)
	n      int                               // the header's length
	inline [connInline]byte
	header string // the header when longer than connInline, else ""
}

// connInline is the longest header a connection's memo holds in its own
// bytes: a Basic header of up to 90 characters of user name and password.
const connInline = 128

// set fills v, before it is shared.
func (v *connVerified) set(a *authenticator, header string, e *clockEntry[[32]byte, *principal]) {
	v.a, v.p, v.e, v.n = a, e.v, e, len(header)
	if len(header) <= connInline {
		copy(v.inline[:], header)
	} else {
		v.header = header
	}
}

// same reports whether header is v's, in a time that depends on the
// lengths alone.
func (v *connVerified) same(header string) bool {
	if len(header) != v.n {
		return false
	}
	if v.n > connInline {
		return sameHeader(v.header, header)
	}
	return sameHeader(v.inline[:v.n], header)
}

type connMemoKey struct{}

// ConnContext is http.Server.ConnContext for the public listener: it gives
// each connection its memo of a verified Authorization header (connMemo).
// A request on a connection without one is authenticated as before.
func ConnContext(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, connMemoKey{}, new(connMemo))
}

// remember keeps header, verified by a as e, unless the connection already
// holds a header of a's.
func (m *connMemo) remember(a *authenticator, header string, e *clockEntry[[32]byte, *principal]) {
	old := m.last.Load()
	if old != nil && old.a == a {
		return
	}
	v := &m.first
	if !m.taken.CompareAndSwap(false, true) {
		v = new(connVerified)
	}
	v.set(a, header, e)
	m.last.CompareAndSwap(old, v)
}

// sameHeader compares two headers in a time that depends on their lengths
// alone.
func sameHeader[B string | []byte](x B, y string) bool {
	if len(x) != len(y) {
		return false
	}
	var d byte
	for i := 0; i < len(x); i++ {
		d |= x[i] ^ y[i]
	}
	return d == 0
}

// outcome is the shared result of one check.
type outcome struct {
	p *principal
	d denial
}

// slow checks a header not verified before ("" for one refused unread:
// several Authorization headers, or one too long). Every failure takes a
// token from the client address's bucket, even one that costs no bcrypt,
// so that a client sending nothing but bad credentials is soon answered
// 429 (and held for RefusalDelay) rather than as fast as it can send.
func (a *authenticator) slow(r *http.Request, header string, sum [32]byte) (*principal, denial) {
	g := a.guard
	now := g.now()
	addr := bucketAddr(g.clientIP.Addr(r))
	if wait := g.addresses.wait(addr, now); wait > 0 {
		return nil, denial{reason: RejectThrottled, retryAfter: wait}
	}
	bad := func() (*principal, denial) {
		g.addresses.fail(addr, now)
		return nil, denial{reason: RejectBad}
	}
	name, pass, canonical, ok := parseBasic(header)
	if !ok || len(name) > a.maxName || len(pass) > maxPassword || !utf8.ValidString(name) {
		return bad()
	}
	if _, ok := a.failed.get(sum); ok {
		return bad()
	}
	if wait := g.usernames.wait(name, now); wait > 0 {
		return nil, denial{reason: RejectThrottled, retryAfter: wait}
	}
	v, _, _ := a.flight.Do(string(sum[:]), func() (any, error) {
		var p *principal
		if !g.check(func() { p = a.verify(name, pass) }) {
			return outcome{d: denial{reason: RejectPoolFull, retryAfter: time.Second}}, nil
		}
		switch {
		case p != nil && canonical:
			a.verified.put(sum, p)
		case p == nil:
			a.failed.put(sum, struct{}{})
			now := g.now()
			g.addresses.fail(addr, now)
			g.usernames.fail(name, now)
			return outcome{d: denial{reason: RejectBad}}, nil
		}
		return outcome{p: p}, nil
	})
	o := v.(outcome)
	return o.p, o.d
}

// parseBasic splits a Basic Authorization header. canonical reports the
// one spelling a client library sends ("Basic " in any case, then the
// padded standard base64 of the exact bytes); only that spelling is
// remembered, so one password cannot fill the memo with variants.
func parseBasic(header string) (name, pass string, canonical, ok bool) {
	const prefix = "Basic "
	if len(header) < len(prefix) || !strings.EqualFold(header[:len(prefix)], prefix) {
		return "", "", false, false
	}
	enc := header[len(prefix):]
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
	if err != nil {
		return "", "", false, false
	}
	name, pass, ok = strings.Cut(string(raw), ":")
	if !ok {
		return "", "", false, false
	}
	return name, pass, base64.StdEncoding.EncodeToString(raw) == enc, true
}

// verify runs bcrypt: for an unknown user against a dummy hash, so that
// the time taken does not tell whether the user exists.
func (a *authenticator) verify(name, pass string) *principal {
	u := a.users[name]
	if u == nil {
		if a.dummy != nil {
			_ = a.guard.compare(a.dummy, []byte(pass))
		}
		return nil
	}
	if a.guard.compare(u.PasswordHash, []byte(pass)) != nil {
		return nil
	}
	return a.principalOf(name)
}

// principalOf is the principal of the configured user name, nil for none
// (or one whose tenant is gone). It checks no credentials: verify calls it
// once the password matched, and the warm-up (Server.WarmUp), which no
// request can reach, to replay a recorded request as its user.
func (a *authenticator) principalOf(name string) *principal {
	u := a.users[name]
	if u == nil {
		return nil
	}
	t := a.tenants[u.Tenant]
	if t == nil {
		return nil
	}
	c := compatOf(u, t)
	return &principal{username: u.Username, tenant: t, perms: u.Permissions, variant: u.Permissions.String(), compat: c, compatKey: c.key()}
}

// bucketAddr is the address a failure bucket is kept for: IPv6 clients
// are counted per /64, the block one subscriber usually holds.
func bucketAddr(a netip.Addr) netip.Addr {
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.Addr()
	}
	return a
}
