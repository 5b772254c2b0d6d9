package admin

import (
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"
)

// Defaults of the operator check's failure throttle: the public listener's
// own per-address bucket (proxy.DefaultAddressFailures), so that a flood of
// wrong admin passwords costs what one of wrong API passwords does.
const (
	// DefaultFailuresPerMinute is how many failed operator checks one client
	// address (an IPv6 client: its /64) may make a minute after its burst.
	DefaultFailuresPerMinute = 30
	// DefaultFailureBurst is how many failed checks an address may make at
	// once before it is throttled.
	DefaultFailureBurst = 10
	// DefaultRefusalDelay holds a throttled 429 this long before it is sent:
	// a client looping on wrong passwords waits instead of spinning, at the
	// cost of a parked goroutine and no CPU.
	DefaultRefusalDelay = time.Second
	// failureAddresses bounds the addresses remembered; the least recently
	// failing is forgotten first (a forgotten address starts a full bucket,
	// which an attacker with more than this many addresses gets anyway).
	failureAddresses = 4096
)

// failureThrottle is a token bucket (x/time/rate) per client address,
// taken from by every failed operator check and consulted before a bcrypt:
// an address whose bucket is empty gets 429 without a check. The buckets
// live in a bounded LRU (hashicorp/golang-lru), so a flood from many
// addresses costs bounded memory.
type failureThrottle struct {
	limit rate.Limit
	burst int
	delay time.Duration
	now   func() time.Time
	mu    sync.Mutex // makes get-or-add one step
	m     *lru.Cache[netip.Addr, *rate.Limiter]
}

func newFailureThrottle(now func() time.Time, delay time.Duration) *failureThrottle {
	m, _ := lru.New[netip.Addr, *rate.Limiter](failureAddresses) // errors only for a size <= 0
	return &failureThrottle{
		limit: rate.Limit(DefaultFailuresPerMinute / 60.0), burst: DefaultFailureBurst,
		delay: delay, now: now, m: m,
	}
}

// clientAddr is the bucket of a request: its TCP peer (the admin listener
// is reached directly, not through the public listener's trusted proxies),
// an IPv6 peer per /64.
func clientAddr(r *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.Addr()
	}
	return a
}

// wait is how long addr must wait before its next check may run: 0 when
// its bucket holds a token.
func (t *failureThrottle) wait(addr netip.Addr) time.Duration {
	l, ok := t.m.Get(addr)
	if !ok {
		return 0
	}
	tokens := l.TokensAt(t.now())
	if tokens >= 1 {
		return 0
	}
	return time.Duration((1 - tokens) / float64(t.limit) * float64(time.Second))
}

// fail takes a token from addr's bucket.
func (t *failureThrottle) fail(addr netip.Addr) {
	t.mu.Lock()
	l, ok := t.m.Get(addr)
	if !ok {
		l = rate.NewLimiter(t.limit, t.burst)
		t.m.Add(addr, l)
	}
	t.mu.Unlock()
	l.ReserveN(t.now(), 1) // may leave the bucket in debt: only a longer wait
}

// refuse answers a throttled request: 429 with Retry-After (whole seconds,
// at least 1), after holding it t.delay unless the client goes away first.
func (t *failureThrottle) refuse(w http.ResponseWriter, r *http.Request, wait time.Duration) {
	if t.delay > 0 {
		timer := time.NewTimer(t.delay)
		select {
		case <-timer.C:
		case <-r.Context().Done():
			timer.Stop()
		}
	}
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int((wait+time.Second-1)/time.Second))))
	http.Error(w, "too many failed admin credential checks from this address: retry later", http.StatusTooManyRequests)
}
