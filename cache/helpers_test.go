package cache

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"listingproxy/internal/testkit"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fakeClock is an injected clock that only moves when told.
type fakeClock = testkit.Clock

func newClock() *fakeClock { return testkit.NewClock(t0) }

// fakeLoader is a loader whose latency, results, errors and panics the test
// controls through channels.
type fakeLoader struct {
	clock *fakeClock
	calls atomic.Int32
	// started receives the call number when a call starts (buffered).
	started chan int32
	// gate, if not nil, is received from before a call returns; close it to
	// release every call.
	gate chan struct{}
	// result decides call n's outcome; nil means a body "v<n>".
	result func(ctx context.Context, n int32) (*Entry, error)
	// ctxErrs records each call's ctx.Err() as it returned.
	mu      sync.Mutex
	ctxErrs []error
}

func newLoader(c *fakeClock) *fakeLoader {
	return &fakeLoader{clock: c, started: make(chan int32, 1024)}
}

func (f *fakeLoader) gated() *fakeLoader {
	f.gate = make(chan struct{})
	return f
}

func (f *fakeLoader) load(ctx context.Context) (*Entry, error) {
	n := f.calls.Add(1)
	f.started <- n
	if f.gate != nil {
		<-f.gate
	}
	defer func() {
		f.mu.Lock()
		f.ctxErrs = append(f.ctxErrs, ctx.Err())
		f.mu.Unlock()
	}()
	if f.result != nil {
		return f.result(ctx, n)
	}
	return NewEntry([]byte("v"+itoa(int(n))), "text/plain", false, f.now()), nil
}

func (f *fakeLoader) now() time.Time {
	if f.clock == nil {
		return time.Now()
	}
	return f.clock.Now()
}

func (f *fakeLoader) Calls() int { return int(f.calls.Load()) }

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

var errBackend = errors.New("backend down")

func newStore(t testing.TB, o Options) *Store {
	t.Helper()
	s, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// waitJoined waits until n Gets have registered with a flight.
func waitJoined(t testing.TB, s *Store, n uint64) {
	t.Helper()
	testkit.WaitFor(t, "callers to join the flight", func() bool { return s.st.joins.Load() >= n })
}

type result struct {
	e   *Entry
	o   Outcome
	err error
}

func body(e *Entry) string {
	if e == nil {
		return "<nil>"
	}
	return string(e.Body)
}
