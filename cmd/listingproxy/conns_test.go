package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"listingproxy/config"
)

// guardClock is a settable clock for the connection guard.
type guardClock struct{ ns atomic.Int64 }

func (c *guardClock) Now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *guardClock) Add(d time.Duration) { c.ns.Add(int64(d)) }

var guardLimits = config.Server{
	ReadHeaderTimeout: config.Duration(5 * time.Second),
	ReadTimeout:       config.Duration(15 * time.Second),
	WriteTimeout:      config.Duration(30 * time.Second),
	IdleTimeout:       config.Duration(120 * time.Second),
	MaxHeaderBytes:    16 << 10,
}

// guardedServer serves h on 127.0.0.1 behind a guard driven by a fake clock:
// nothing is closed except by the test's own sweeps.
func guardedServer(t *testing.T, h http.Handler) (*connGuard, *guardClock, string) {
	t.Helper()
	clk := &guardClock{}
	clk.ns.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	g := newConnGuard(guardLimits, clk.Now, slog.New(slog.DiscardHandler))
	if g.tick != 500*time.Millisecond {
		t.Fatalf("tick = %v, want 500ms (a tenth of the 5s header limit)", g.tick)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := g.server(guardLimits, h, slog.New(slog.DiscardHandler))
	go func() { _ = srv.Serve(g.listener(ln)) }()
	t.Cleanup(func() { _ = srv.Close() })
	return g, clk, ln.Addr().String()
}

// phaseOf waits until the guard watches exactly one connection in phase
// want (and, for an idle one, with a first byte noted when first is set).
func phaseOf(t *testing.T, g *connGuard, want int32, first bool) {
	t.Helper()
	eventually(t, "connection phase", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		for c := range g.conns {
			return len(g.conns) == 1 && c.phase.Load() == want && (!first || c.first.Load() != 0)
		}
		return false
	})
}

// closedByServer reports whether the server closed conn: a read ends with
// EOF or a reset rather than the short deadline set here.
func closedByServer(t *testing.T, conn net.Conn) bool {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err := io.ReadAll(conn)
	if err == nil || errors.Is(err, io.EOF) {
		return true
	}
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// roundTrip sends one keep-alive GET on conn and reads its response.
func roundTrip(t *testing.T, conn net.Conn, br *bufio.Reader) {
	t.Helper()
	if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })

// sweepAt moves the clock by d, sweeps, and checks how many were closed.
func sweepAt(t *testing.T, g *connGuard, clk *guardClock, d time.Duration, want int, what string) {
	t.Helper()
	clk.Add(d)
	if got := g.sweep(); got != want {
		t.Fatalf("%s: sweep closed %d connections, want %d", what, got, want)
	}
}

func TestGuardHeaderTimeoutOnNewConnection(t *testing.T) {
	g, clk, addr := guardedServer(t, okHandler)
	conn := dial(t, addr)
	_, _ = io.WriteString(conn, "GET / HTTP/1.1\r\nHo") // and nothing more
	phaseOf(t, g, phaseNew, false)
	sweepAt(t, g, clk, 5*time.Second, 0, "at the limit")
	sweepAt(t, g, clk, 500*time.Millisecond, 0, "a tick after (stamps may be a tick early)")
	sweepAt(t, g, clk, 100*time.Millisecond, 1, "more than a tick after")
	if !closedByServer(t, conn) {
		t.Error("a connection past read_header_timeout is still open")
	}
	if n := g.connections(); n != 0 {
		t.Errorf("guard still watches %d connections", n)
	}
}

func TestGuardIdleThenSlowHeaders(t *testing.T) {
	g, clk, addr := guardedServer(t, okHandler)
	conn := dial(t, addr)
	br := bufio.NewReader(conn)
	roundTrip(t, conn, br)
	phaseOf(t, g, phaseIdle, false)
	// Idle: the idle limit applies, not the header one.
	sweepAt(t, g, clk, 119*time.Second, 0, "idle within idle_timeout")
	roundTrip(t, conn, br) // the connection still serves
	phaseOf(t, g, phaseIdle, false)

	// A request that starts and stalls: the header limit runs from its
	// first byte.
	_, _ = io.WriteString(conn, "GET / HTTP/1.1\r\nHo")
	phaseOf(t, g, phaseIdle, true)
	sweepAt(t, g, clk, 5*time.Second, 0, "slow headers at the limit")
	sweepAt(t, g, clk, 1100*time.Millisecond, 1, "slow headers past the limit")
	if !closedByServer(t, conn) {
		t.Error("a connection stalled in its headers is still open")
	}
}

func TestGuardIdleTimeout(t *testing.T) {
	g, clk, addr := guardedServer(t, okHandler)
	conn := dial(t, addr)
	roundTrip(t, conn, bufio.NewReader(conn))
	phaseOf(t, g, phaseIdle, false)
	sweepAt(t, g, clk, 120*time.Second, 0, "idle at the limit")
	sweepAt(t, g, clk, 1100*time.Millisecond, 1, "idle past the limit")
	if !closedByServer(t, conn) {
		t.Error("a connection past idle_timeout is still open")
	}
}

func TestGuardWriteTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	g, clk, addr := guardedServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	conn := dial(t, addr)
	_, _ = io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	phaseOf(t, g, phaseActive, false)
	sweepAt(t, g, clk, 30*time.Second, 0, "busy at write_timeout")
	sweepAt(t, g, clk, 1100*time.Millisecond, 1, "busy past write_timeout")
	if !closedByServer(t, conn) {
		t.Error("a request past write_timeout still holds its connection")
	}
}

// TestGuardLeavesBusyServerAlone sweeps between many keep-alive requests on
// several connections: nothing is closed, every request is answered.
func TestGuardLeavesBusyServerAlone(t *testing.T) {
	g, clk, addr := guardedServer(t, okHandler)
	var conns []net.Conn
	var readers []*bufio.Reader
	for range 4 {
		c := dial(t, addr)
		conns, readers = append(conns, c), append(readers, bufio.NewReader(c))
	}
	for range 50 {
		for i, c := range conns {
			roundTrip(t, c, readers[i])
		}
		sweepAt(t, g, clk, 2*time.Second, 0, "between requests")
	}
	if n := g.connections(); n != 4 {
		t.Errorf("guard watches %d connections, want 4", n)
	}
	for _, c := range conns {
		_ = c.Close()
	}
	eventually(t, "closed connections forgotten", func() bool { return g.connections() == 0 })
}

func TestGuardTick(t *testing.T) {
	for _, tc := range []struct {
		header, write, idle time.Duration
		want                time.Duration
	}{
		{5 * time.Second, 30 * time.Second, 120 * time.Second, 500 * time.Millisecond},
		{time.Minute, time.Minute, time.Hour, time.Second},
		{20 * time.Millisecond, time.Second, time.Second, 10 * time.Millisecond},
	} {
		g := newConnGuard(config.Server{ReadHeaderTimeout: config.Duration(tc.header), WriteTimeout: config.Duration(tc.write), IdleTimeout: config.Duration(tc.idle)}, time.Now, slog.New(slog.DiscardHandler))
		if g.tick != tc.want {
			t.Errorf("limits %v/%v/%v: tick %v, want %v", tc.header, tc.write, tc.idle, g.tick, tc.want)
		}
	}
	g := newConnGuard(config.Server{ReadHeaderTimeout: config.Duration(5 * time.Second), ReadTimeout: config.Duration(2 * time.Second)}, time.Now, slog.New(slog.DiscardHandler))
	if g.header != 2*time.Second {
		t.Errorf("header limit %v, want read_timeout's 2s when it is the smaller", g.header)
	}
}

// TestRunClosesSlowHeaders is the guard wired into run: a real clock, a
// short read_header_timeout, and a client that never finishes its headers.
func TestRunClosesSlowHeaders(t *testing.T) {
	cfgPath := demoConfig(t)
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(raw), "read_header_timeout: 5s", "read_header_timeout: 200ms", 1)
	if edited == string(raw) {
		t.Fatal("demo config has no read_header_timeout: 5s to edit")
	}
	if err := os.WriteFile(cfgPath, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	base, _ := startRun(t, cfgPath)
	addr := strings.TrimPrefix(base, "http://")
	conn := dial(t, addr)
	_, _ = io.WriteString(conn, "GET /au/properties.xml HTTP/1.1\r\nHo")
	start := time.Now()
	if !closedByServer(t, conn) {
		t.Fatal("run kept a connection whose headers never finished")
	}
	if time.Since(start) < 200*time.Millisecond {
		t.Error("closed before read_header_timeout")
	}
	// A well-behaved client is still served.
	c2 := dial(t, addr)
	roundTrip401(t, c2)
}

func roundTrip401(t *testing.T, conn net.Conn) {
	t.Helper()
	_, _ = io.WriteString(conn, "GET /au/properties.xml HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("status %d, want 401 (no credentials)", resp.StatusCode)
	}
}

// startRun runs the service on cfgPath until the test ends (then it must
// shut down cleanly: run returns nil) and returns its public and admin base
// URLs, once it prints where it listens.
func startRun(t *testing.T, cfgPath string) (base, admin string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"listingproxy", "-config", cfgPath}, func(string) string { return "" }, strings.NewReader(""), pw, io.Discard)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run returned %v after shutdown, want nil", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("run did not return after its context was cancelled")
		}
	})
	lines := bufio.NewScanner(pr)
	for lines.Scan() {
		if m := listenLine.FindStringSubmatch(lines.Text()); m != nil {
			base, admin = m[1], m[2]
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	if base == "" {
		t.Fatal("run never printed where it listens")
	}
	return base, admin
}
