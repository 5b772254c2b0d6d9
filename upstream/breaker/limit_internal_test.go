package breaker

import (
	"context"
	"testing"
	"time"
)

// sampleN runs n calls of tenant t through l one after another, each
// taking rtt on an injected clock, with hold other calls in flight beside
// them (so the limit counts as in use or not).
func sampleN(t *testing.T, l *limiter, now *time.Time, s Settings, n, hold int, rtt time.Duration) {
	t.Helper()
	var held []time.Time
	for range hold {
		start, err := l.acquire(context.Background(), "bg", s, func() time.Time { return *now })
		if err != nil {
			t.Fatalf("holding a slot: %v", err)
		}
		held = append(held, start)
	}
	for range n {
		start, err := l.acquire(context.Background(), "t", s, func() time.Time { return *now })
		if err != nil {
			t.Fatalf("acquire: %v", err)
		}
		*now = now.Add(rtt)
		l.release("t", start, *now, answerSample, s)
	}
	for _, start := range held {
		l.release("bg", start, start, noSample, s)
	}
}

// TestAdaptiveLimit: the limit grows while latency holds and the limit is
// in use, stays put while it is not in use, shrinks once per episode when
// latency rises, never below the floor nor above the ceiling, and grows
// again once latency holds at its new level. Latencies come from an
// injected clock: nothing here depends on timing.
func TestAdaptiveLimit(t *testing.T) {
	s := Settings{TenantShare: 1}.WithDefaults()
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	l := newLimiter("crm", 256, true)
	if got := l.current(); got != InitialConcurrency {
		t.Fatalf("initial limit %d, want %d", got, InitialConcurrency)
	}

	// Not in use (one call at a time of 16): latency holding says nothing
	// about more concurrency, so the limit stays.
	sampleN(t, l, &now, s, 50, 0, 300*time.Millisecond)
	if got := l.current(); got != InitialConcurrency {
		t.Errorf("limit after idle samples %d, want %d", got, InitialConcurrency)
	}

	// In use (half of it held beside) at a steady 300 ms: it grows, by
	// about √limit per sample, up to the ceiling.
	sampleN(t, l, &now, s, 3, 8, 300*time.Millisecond)
	if got := l.current(); got <= InitialConcurrency || got > InitialConcurrency+3*8 {
		t.Errorf("limit after 3 busy samples %d, want in (%d, %d]", got, InitialConcurrency, InitialConcurrency+3*8)
	}
	for range 100 {
		sampleN(t, l, &now, s, 1, l.current()/2, 300*time.Millisecond)
	}
	if got := l.current(); got != 256 {
		t.Fatalf("limit after 100 busy samples at steady latency %d, want the ceiling 256", got)
	}

	// Latency rises to 3 s (ten times): calls ending together, at one
	// instant, cut the limit once, not once each.
	l.mu.Lock()
	for range 10 {
		l.observe(3*time.Second, now, true)
	}
	once := l.current()
	l.mu.Unlock()
	if once >= 256 || once < 128 {
		t.Errorf("limit after 10 samples at 10x latency ending together %d, want one cut: in [128, 256)", once)
	}

	// A long episode: it keeps shrinking, at most once per long-term
	// latency, down to the floor and no further.
	lowest := once
	for range 100 {
		sampleN(t, l, &now, s, 1, 2, 30*time.Second)
		lowest = min(lowest, l.current())
	}
	if lowest != MinConcurrency {
		t.Errorf("lowest limit in a long episode at 100x latency %d, want the floor %d", lowest, MinConcurrency)
	}

	// Failures faster than the usual latency (an error page at once) say
	// nothing of the load: they move neither the averages nor the limit.
	l.mu.Lock()
	short, long, limit := l.short, l.long, l.limit
	l.mu.Unlock()
	for range 500 {
		start, err := l.acquire(context.Background(), "t", s, func() time.Time { return now })
		if err != nil {
			t.Fatal(err)
		}
		l.release("t", start, start.Add(time.Millisecond), failureSample, s)
	}
	l.mu.Lock()
	if l.short != short || l.long != long || l.limit != limit {
		t.Errorf("after fast failures: short %v long %v limit %v, want unchanged %v %v %v", l.short, l.long, l.limit, short, long, limit)
	}
	l.mu.Unlock()

	// Latency back to 300 ms: it grows again while in use.
	for range 100 {
		sampleN(t, l, &now, s, 1, l.current()/2, 300*time.Millisecond)
	}
	if got := l.current(); got != 256 {
		t.Errorf("limit after recovery %d, want the ceiling 256", got)
	}
}

// TestFixedLimit: a limiter that is not adaptive keeps its ceiling
// whatever the latencies.
func TestFixedLimit(t *testing.T) {
	s := Settings{}.WithDefaults()
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	l := newLimiter("sql", 10, false)
	sampleN(t, l, &now, s, 50, 4, time.Millisecond)
	sampleN(t, l, &now, s, 50, 4, time.Minute)
	if got := l.current(); got != 10 {
		t.Errorf("fixed limit %d after samples, want 10", got)
	}
}
