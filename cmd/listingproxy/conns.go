package main

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"listingproxy/config"
)

// connGuard enforces the public listener's timeouts (server.read_header_timeout,
// read_timeout, write_timeout, idle_timeout) by watching each connection's
// state against a coarse clock, and closing the connections that overstay.
//
// net/http enforces the same timeouts with socket deadlines that it sets and
// clears several times per request, and each costs a clock reading and a
// runtime timer update: on a cache hit that was about 5% of listingproxy's
// CPU. The guard instead stamps state changes with a clock read once per
// tick, and a single goroutine sweeps every connection once per tick. The
// limits are the same; they are enforced within two ticks after they pass
// (a tick is a tenth of the shortest limit, between 10ms and 1s), never
// before.
//
// What each limit covers:
//   - read_header_timeout (and read_timeout, the smaller wins): from a new
//     connection's accept, or from the first byte of a request on a kept-alive
//     connection, until its headers are read;
//   - write_timeout: from the end of the headers until the response is
//     written (handler time included, as in net/http), and any request body
//     with it: listingproxy never reads one, net/http discards it;
//   - idle_timeout: a kept-alive connection with no new request.
//
// The admin listener keeps net/http's own timeouts: it is not on a hot path.
type connGuard struct {
	header, active, idle time.Duration
	tick                 time.Duration
	clock                func() time.Time
	log                  *slog.Logger

	now atomic.Int64 // coarse clock: UnixNano at the last sweep

	mu    sync.Mutex
	conns map[*guardedConn]struct{}
}

// Phases of a guarded connection.
const (
	phaseNew    int32 = iota // accepted, first request not read yet
	phaseActive              // a request's headers were read; handler and response
	phaseIdle                // between requests (first marks the next one's start)
	phaseGone                // closed (by the guard or the server), or hijacked
)

func newConnGuard(c config.Server, clock func() time.Time, log *slog.Logger) *connGuard {
	g := &connGuard{
		header: positiveMin(c.ReadHeaderTimeout.D(), c.ReadTimeout.D()),
		active: c.WriteTimeout.D(),
		idle:   c.IdleTimeout.D(),
		clock:  clock,
		log:    log,
		conns:  make(map[*guardedConn]struct{}),
	}
	shortest := positiveMin(positiveMin(g.header, g.active), g.idle)
	g.tick = min(max(shortest/10, 10*time.Millisecond), time.Second)
	g.now.Store(clock().UnixNano())
	return g
}

// positiveMin is the smaller of two limits, where zero or less means none.
func positiveMin(a, b time.Duration) time.Duration {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	}
	return min(a, b)
}

// server returns the public http.Server: no net/http timeouts (the guard
// enforces them), the guard's state hook, and the other settings of c.
func (g *connGuard) server(c config.Server, h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:        h,
		MaxHeaderBytes: int(c.MaxHeaderBytes),
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		ConnState:      g.connState,
		// OPTIONS * is answered by the proxy's handler (spec error body),
		// not net/http's empty 200.
		DisableGeneralOptionsHandler: true,
	}
}

// listener wraps ln so that every accepted connection is guarded.
func (g *connGuard) listener(ln net.Listener) net.Listener { return guardedListener{ln, g} }

// run sweeps once per tick until ctx is done.
func (g *connGuard) run(ctx context.Context) {
	t := time.NewTicker(g.tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			g.sweep()
		}
	}
}

// sweep advances the coarse clock and closes every connection past its
// limit; it returns how many it closed.
func (g *connGuard) sweep() int {
	now := g.clock().UnixNano()
	g.now.Store(now)
	var overdue []*guardedConn
	g.mu.Lock()
	for c := range g.conns {
		if reason := c.overdue(now); reason != "" {
			delete(g.conns, c)
			c.phase.Store(phaseGone)
			overdue = append(overdue, c)
			g.log.Debug("closing connection", "reason", reason, "remote", c.RemoteAddr().String())
		}
	}
	g.mu.Unlock()
	for _, c := range overdue {
		_ = c.Conn.Close()
	}
	return len(overdue)
}

// connState is the http.Server's ConnState hook: it records each
// connection's phase and when it began.
func (g *connGuard) connState(nc net.Conn, s http.ConnState) {
	c, ok := nc.(*guardedConn)
	if !ok {
		return
	}
	switch s {
	case http.StateActive:
		c.since.Store(g.now.Load())
		c.phase.Store(phaseActive)
	case http.StateIdle:
		c.first.Store(0)
		c.since.Store(g.now.Load())
		c.phase.Store(phaseIdle)
	case http.StateHijacked, http.StateClosed:
		c.phase.Store(phaseGone)
		g.mu.Lock()
		delete(g.conns, c)
		g.mu.Unlock()
	}
}

// connections is the number of connections being watched.
func (g *connGuard) connections() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.conns)
}

type guardedListener struct {
	net.Listener
	g *connGuard
}

func (l guardedListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	c := &guardedConn{Conn: nc, g: l.g}
	c.since.Store(l.g.now.Load())
	l.g.mu.Lock()
	l.g.conns[c] = struct{}{}
	l.g.mu.Unlock()
	return c, nil
}

// guardedConn is an accepted connection with its phase. Its clock values
// are the guard's coarse clock (UnixNano).
type guardedConn struct {
	net.Conn
	g     *connGuard
	phase atomic.Int32 // phaseNew at accept
	since atomic.Int64 // when the phase began
	first atomic.Int64 // idle phase: when the next request's first byte came (0: not yet)
}

// Read notes the first byte of a request on an idle connection: from then
// on the header limit applies instead of the idle one.
func (c *guardedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && c.phase.Load() == phaseIdle && c.first.Load() == 0 {
		c.first.Store(c.g.now.Load())
	}
	return n, err
}

// CloseWrite lets net/http half-close the connection, as it does with a
// bare TCP connection.
func (c *guardedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// overdue names the limit c has overstayed at now, or "". Stamps are up to
// a tick early, so a limit counts as passed once a tick more has elapsed:
// never before the limit, at most two ticks after.
func (c *guardedConn) overdue(now int64) string {
	g := c.g
	past := func(start int64, limit time.Duration) bool {
		return limit > 0 && now-start > int64(limit+g.tick)
	}
	switch c.phase.Load() {
	case phaseNew:
		if past(c.since.Load(), g.header) {
			return "read_header_timeout"
		}
	case phaseActive:
		if past(c.since.Load(), g.active) {
			return "write_timeout"
		}
	case phaseIdle:
		if first := c.first.Load(); first != 0 {
			if past(first, g.header) {
				return "read_header_timeout"
			}
		} else if past(c.since.Load(), g.idle) {
			return "idle_timeout"
		}
	}
	return ""
}
