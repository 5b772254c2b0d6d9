// Package testkit holds the helpers tests of several packages share: a
// fake clock, a fake upstream.Backend, a Basic authorization header, a
// loopback address nobody listens on and a self-signed certificate. Only
// _test.go files import it.
//
// It imports the standard library, normalize and upstream only, so any
// package's tests may use it without a cycle (upstream's own tests
// excepted: they are in package upstream).
package testkit

import (
	"encoding/base64"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Clock is an injected clock that moves only when told. It is safe for
// concurrent use; pass its Now method where a package takes a clock.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// CPUTime is the CPU time the process has used so far, user and system,
// every thread (the collector and background goroutines count). A
// benchmark reports it per op next to ns/op: on a machine shared with
// other work, ns/op also counts the time other processes held the CPU.
func CPUTime(t testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// NewClock returns a Clock reading t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// BasicAuth is the Authorization header of user and password.
func BasicAuth(user, password string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
}

// ClosedAddr returns a loopback host:port nobody listens on (a listener
// opened and closed at once): a dial to it is refused.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// DocumentedDefaults reads the reference tables of the Markdown file at
// path (rows "| `key` | default | meaning |") and returns the default cell
// of every key that keep accepts, for tests that check a package's
// defaults against the documentation.
func DocumentedDefaults(t testing.TB, path string, keep func(key string) bool) map[string]string {
	t.Helper()
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for line := range strings.SplitSeq(string(doc), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			continue
		}
		key := strings.Trim(strings.TrimSpace(cells[1]), "`")
		if keep(key) {
			got[key] = strings.TrimSpace(cells[2])
		}
	}
	return got
}

// WaitFor polls cond until it holds and fails the test when it has not
// held after three minutes: a watchdog generous enough for -race on a loaded
// machine (a SQLite demo seeded under -race at load average 12 took over
// 30 s), not an assertion on elapsed time. It waits for an event; tests that can be
// told of the event through a channel should use the channel instead.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}
