package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

var errNotFound = errors.New("not found")

func isNotFound(err error) bool { return errors.Is(err, errNotFound) }

// gobreaker reads the real clock, so the half-open tests use a short OpenFor
// and wait for the state to change; nothing asserts on elapsed time.
const shortOpen = 50 * time.Millisecond

func fails(context.Context) error    { return errBackend }
func succeeds(context.Context) error { return nil }

func TestBreakerOpensAndFailsFast(t *testing.T) {
	b := NewBreaker(BreakerOptions{Name: "crm", ConsecutiveFailures: 3, OpenFor: time.Hour})
	ctx := context.Background()
	for i := range 3 {
		if b.State() != StateClosed {
			t.Fatalf("after %d failures: %v, want closed", i, b.State())
		}
		if err := b.Do(ctx, fails); !errors.Is(err, errBackend) {
			t.Fatalf("Do = %v, want the backend error unchanged", err)
		}
	}
	if b.State() != StateOpen {
		t.Fatalf("after 3 failures: %v, want open", b.State())
	}
	called := false
	err := b.Do(ctx, func(context.Context) error { called = true; return nil })
	if !errors.Is(err, ErrOpen) || called {
		t.Errorf("Do while open = %v (fn called: %v); want ErrOpen without a call", err, called)
	}
	if want := "breaker crm: circuit breaker open"; err.Error() != want {
		t.Errorf("error text %q, want %q", err, want)
	}
}

func TestBreakerSuccessResetsConsecutive(t *testing.T) {
	b := NewBreaker(BreakerOptions{ConsecutiveFailures: 3})
	ctx := context.Background()
	for range 10 {
		b.Do(ctx, fails)
		b.Do(ctx, fails)
		b.Do(ctx, succeeds)
	}
	if b.State() != StateClosed {
		t.Errorf("state %v, want closed (never 3 failures in a row)", b.State())
	}
}

func TestBreakerHalfOpenProbes(t *testing.T) {
	var mu sync.Mutex
	var changes []string
	b := NewBreaker(BreakerOptions{
		Name: "sql", ConsecutiveFailures: 1, OpenFor: shortOpen, HalfOpenProbes: 2,
		OnStateChange: func(name string, from, to State) {
			mu.Lock()
			changes = append(changes, fmt.Sprintf("%s:%v->%v", name, from, to))
			mu.Unlock()
		},
	})
	ctx := context.Background()
	b.Do(ctx, fails)
	if b.State() != StateOpen {
		t.Fatalf("state %v, want open", b.State())
	}
	eventually(t, "half-open", func() bool { return b.State() == StateHalfOpen })

	// A failed probe opens it again.
	if err := b.Do(ctx, fails); !errors.Is(err, errBackend) {
		t.Fatalf("probe = %v", err)
	}
	if b.State() != StateOpen {
		t.Fatalf("after failed probe: %v, want open", b.State())
	}
	eventually(t, "half-open again", func() bool { return b.State() == StateHalfOpen })

	// HalfOpenProbes calls are let through; more concurrent ones fail fast.
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if err := b.Do(ctx, func(context.Context) error { <-release; return nil }); err != nil {
				t.Errorf("probe = %v", err)
			}
		})
	}
	eventually(t, "probes in flight", func() bool {
		return b.cb.Counts().Requests == 2
	})
	if err := b.Do(ctx, succeeds); !errors.Is(err, ErrOpen) {
		t.Errorf("third call while probing = %v, want ErrOpen", err)
	}
	close(release)
	wg.Wait()
	if b.State() != StateClosed {
		t.Errorf("after successful probes: %v, want closed", b.State())
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{
		"sql:closed->open", "sql:open->half-open", "sql:half-open->open",
		"sql:open->half-open", "sql:half-open->closed",
	}
	if fmt.Sprint(changes) != fmt.Sprint(want) {
		t.Errorf("state changes %v, want %v", changes, want)
	}
}

func TestBreakerNeverCounts(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		fn   func(context.Context) error
		want error
	}{
		{"answer", context.Background(), func(context.Context) error { return fmt.Errorf("get 7: %w", errNotFound) }, errNotFound},
		{"context.Canceled", context.Background(), func(context.Context) error { return context.Canceled }, context.Canceled},
		{"wrapped cancellation", context.Background(), func(context.Context) error { return fmt.Errorf("query: %w", context.Canceled) }, context.Canceled},
		{"caller already gone", cancelled, fails, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBreaker(BreakerOptions{ConsecutiveFailures: 1, IsAnswer: isNotFound})
			for range 20 {
				if err := b.Do(tc.ctx, tc.fn); !errors.Is(err, tc.want) {
					t.Fatalf("Do = %v, want %v", err, tc.want)
				}
			}
			if b.State() != StateClosed {
				t.Errorf("state %v, want closed", b.State())
			}
		})
	}
}

func TestBreakerCallerCancelledMidCall(t *testing.T) {
	// The caller goes away during the call and the backend reports some
	// other error as a result: not the backend's fault.
	b := NewBreaker(BreakerOptions{ConsecutiveFailures: 1})
	for range 5 {
		ctx, cancel := context.WithCancel(context.Background())
		err := b.Do(ctx, func(context.Context) error { cancel(); return errors.New("connection reset") })
		if err == nil {
			t.Fatal("Do = nil, want the error")
		}
	}
	if b.State() != StateClosed {
		t.Errorf("state %v, want closed", b.State())
	}
}

func TestBreakerDeadlineCounts(t *testing.T) {
	b := NewBreaker(BreakerOptions{ConsecutiveFailures: 2})
	for range 2 {
		b.Do(context.Background(), func(context.Context) error { return context.DeadlineExceeded })
	}
	if b.State() != StateOpen {
		t.Errorf("state %v, want open: a backend that times out is failing", b.State())
	}
}

func TestBreakerPanic(t *testing.T) {
	b := NewBreaker(BreakerOptions{ConsecutiveFailures: 1})
	err := b.Do(context.Background(), func(context.Context) error { panic("kaput") })
	var pe *PanicError
	if !errors.As(err, &pe) || pe.Value != "kaput" {
		t.Fatalf("Do = %v, want *PanicError", err)
	}
	if b.State() != StateOpen {
		t.Errorf("state %v, want open: a panic is a failure", b.State())
	}
}

func TestBreakerFailureRatio(t *testing.T) {
	b := NewBreaker(BreakerOptions{FailureRatio: 0.5, MinRequests: 10, Window: time.Hour})
	ctx := context.Background()
	for range 4 { // 4 of 8: the ratio is met but too few calls
		b.Do(ctx, fails)
		b.Do(ctx, succeeds)
	}
	if b.State() != StateClosed {
		t.Fatalf("below MinRequests: %v, want closed", b.State())
	}
	b.Do(ctx, succeeds)
	b.Do(ctx, fails) // 5 of 10
	if b.State() != StateOpen {
		t.Errorf("5 failures of 10: %v, want open", b.State())
	}
}

func TestBreakerAnswersCloseHalfOpen(t *testing.T) {
	b := NewBreaker(BreakerOptions{ConsecutiveFailures: 1, OpenFor: shortOpen, HalfOpenProbes: 1, IsAnswer: isNotFound})
	b.Do(context.Background(), fails)
	eventually(t, "half-open", func() bool { return b.State() == StateHalfOpen })
	err := b.Do(context.Background(), func(context.Context) error { return errNotFound })
	if !errors.Is(err, errNotFound) || b.State() != StateClosed {
		t.Errorf("answer probe: %v, state %v; want the answer back and closed", err, b.State())
	}
	if b.RetryAfter() != 0 {
		t.Errorf("RetryAfter = %v while closed, want 0", b.RetryAfter())
	}
}

func TestBreakerDefaults(t *testing.T) {
	b := NewBreaker(BreakerOptions{Name: "d"})
	for range DefaultConsecutiveFailures - 1 {
		b.Do(context.Background(), fails)
	}
	if b.State() != StateClosed {
		t.Fatalf("state %v after %d failures, want closed", b.State(), DefaultConsecutiveFailures-1)
	}
	b.Do(context.Background(), fails)
	if b.State() != StateOpen || b.Name() != "d" {
		t.Errorf("state %v after %d failures, want open", b.State(), DefaultConsecutiveFailures)
	}
	for s, want := range map[State]string{StateClosed: "closed", StateHalfOpen: "half-open", StateOpen: "open", 9: "unknown"} {
		if s.String() != want {
			t.Errorf("State(%d) = %q, want %q", s, s, want)
		}
	}
}

func TestBreakerWrapLoader(t *testing.T) {
	b := NewBreaker(BreakerOptions{ConsecutiveFailures: 1, OpenFor: time.Hour})
	calls := 0
	load := b.Wrap(func(context.Context) (*Entry, error) {
		calls++
		return nil, errBackend
	})
	if _, err := load(context.Background()); !errors.Is(err, errBackend) {
		t.Fatalf("first load = %v", err)
	}
	if _, err := load(context.Background()); !errors.Is(err, ErrOpen) || calls != 1 {
		t.Errorf("load while open = %v after %d calls; want ErrOpen after 1", err, calls)
	}
}
