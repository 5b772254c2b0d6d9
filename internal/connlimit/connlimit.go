// Package connlimit bounds what one client address may hold of a listener:
// its open connections, and the connections it may open a second (each a
// TLS handshake, the most expensive thing a client can ask for before it
// has shown any credential). A connection over either bound is closed as
// soon as it is accepted, before its handshake, and counted. Addresses of
// trusted proxies (a load balancer in front) are not bounded: their
// connections carry many clients.
//
// It is a net.Listener wrapper of the standard library's kind (as
// golang.org/x/net/netutil.LimitListener bounds a listener's connections
// in all): a table of counters and x/time/rate buckets per address, in a
// golang-lru cache so that a flood from many addresses costs bounded
// memory. It parses nothing: HTTP/1.1 and HTTP/2 stay net/http's.
package connlimit

import (
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"
)

// Defaults of Options.
const (
	DefaultPerAddress   = 256
	DefaultNewPerSecond = 50
	DefaultNewBurst     = 100
	addresses           = 65536 // addresses remembered
)

// Options configure Listen. The zero value takes the defaults.
type Options struct {
	// PerAddress bounds one address's open connections (IPv6: per /64).
	// Default DefaultPerAddress; negative: no bound.
	PerAddress int
	// NewPerSecond and NewBurst bound the connections one address opens:
	// a token bucket. Default DefaultNewPerSecond, DefaultNewBurst;
	// NewPerSecond negative: no bound.
	NewPerSecond float64
	NewBurst     int
	// Exempt reports addresses that are not bounded (trusted proxies).
	Exempt func(netip.Addr) bool
	// BoundLoopback bounds loopback addresses too; by default they are
	// exempt (the host's own health checks and load tests).
	BoundLoopback bool
	// Now is the clock of the buckets. Default time.Now.
	Now func() time.Time
}

// Stats counts the connections refused, by reason.
type Stats struct {
	TooMany, TooFast uint64
}

// Listener is a bounded net.Listener.
type Listener struct {
	net.Listener
	o       Options
	mu      sync.Mutex // get-or-add of an address's state is one step
	table   *lru.Cache[netip.Addr, *addrState]
	tooMany atomic.Uint64
	tooFast atomic.Uint64
}

type addrState struct {
	open   atomic.Int64
	bucket *rate.Limiter
}

// Listen wraps ln.
func Listen(ln net.Listener, o Options) *Listener {
	if o.PerAddress == 0 {
		o.PerAddress = DefaultPerAddress
	}
	if o.NewPerSecond == 0 {
		o.NewPerSecond = DefaultNewPerSecond
	}
	if o.NewBurst <= 0 {
		o.NewBurst = DefaultNewBurst
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	t, _ := lru.New[netip.Addr, *addrState](addresses) // errors only for a size <= 0
	return &Listener{Listener: ln, o: o, table: t}
}

// Stats returns the refusals so far.
func (l *Listener) Stats() Stats { return Stats{TooMany: l.tooMany.Load(), TooFast: l.tooFast.Load()} }

// Accept returns the next connection within its address's bounds,
// closing those over them.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr, ok := peer(c)
		if !ok || l.exempt(addr) {
			return c, nil
		}
		st := l.state(addr)
		if n := st.open.Add(1); l.o.PerAddress > 0 && n > int64(l.o.PerAddress) {
			st.open.Add(-1)
			l.tooMany.Add(1)
			c.Close()
			continue
		}
		if l.o.NewPerSecond > 0 && !st.bucket.AllowN(l.o.Now(), 1) {
			st.open.Add(-1)
			l.tooFast.Add(1)
			c.Close()
			continue
		}
		return c, nil
	}
}

// ConnState is an http.Server's ConnState hook that gives a closed
// connection's slot back to its address. Connections are returned as
// accepted (not wrapped), so that net/http and internal/onewrite keep
// writing to the *net.TCPConn itself.
func (l *Listener) ConnState(c net.Conn, s http.ConnState) {
	if s != http.StateClosed && s != http.StateHijacked {
		return
	}
	addr, ok := peer(c)
	if !ok || l.exempt(addr) {
		return
	}
	if st, ok := l.table.Get(addr); ok && st.open.Add(-1) < 0 {
		st.open.Store(0) // a state forgotten and made anew meanwhile
	}
}

func (l *Listener) exempt(a netip.Addr) bool {
	return a.IsLoopback() && !l.o.BoundLoopback || l.o.Exempt != nil && l.o.Exempt(a)
}

func (l *Listener) state(a netip.Addr) *addrState {
	l.mu.Lock()
	defer l.mu.Unlock()
	st, ok := l.table.Get(a)
	if !ok {
		st = &addrState{bucket: rate.NewLimiter(rate.Limit(max(l.o.NewPerSecond, 0)), l.o.NewBurst)}
		l.table.Add(a, st)
	}
	return st
}

// peer is a connection's client address, an IPv6 one as its /64.
func peer(c net.Conn) (netip.Addr, bool) {
	ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
	if err != nil {
		return netip.Addr{}, false
	}
	a := ap.Addr().Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		a = p.Addr()
	}
	return a, true
}
