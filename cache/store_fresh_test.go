package cache

import (
	"context"
	"testing"
	"time"
)

func TestFresh(t *testing.T) {
	clk := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := func() time.Time { return clk }
	s, err := New(Options{MaxBytes: 1 << 20, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p := Policy{TTL: time.Minute, StaleWhileRevalidate: time.Minute, NegativeTTL: 10 * time.Second}
	k := Key{Tenant: "a", Resource: "r", Variant: "v"}
	if _, _, _, ok := s.Fresh(k, p); ok {
		t.Fatal("Fresh on an empty store: ok")
	}
	load := func(context.Context) (*Entry, error) {
		return NewEntry([]byte("body"), "text/plain", false, now()), nil
	}
	if _, o, err := s.Get(context.Background(), k, p, load); err != nil || o != Miss {
		t.Fatalf("Get = %v, %v; want a miss", o, err)
	}
	clk = clk.Add(7 * time.Second)
	e, o, at, ok := s.Fresh(k, p)
	if !ok || o != Hit || string(e.Body) != "body" {
		t.Fatalf("Fresh after fill = %v, %v; want the body as a hit", o, ok)
	}
	if !at.Equal(clk) || at.Sub(e.StoredAt) != 7*time.Second {
		t.Errorf("Fresh judged at %v (age %v), want the clock's %v (age 7s)", at, at.Sub(e.StoredAt), clk)
	}
	if got := s.Stats().Hits; got != 1 {
		t.Errorf("hits counted = %d, want 1", got)
	}
	clk = clk.Add(p.TTL + time.Second) // stale: Get must decide (and refresh)
	if _, _, _, ok := s.Fresh(k, p); ok {
		t.Error("Fresh on a stale entry: ok")
	}
	s.Purge("a", "", Hard)
	clk = clk.Add(-p.TTL) // fresh again by age, but purged
	if _, _, _, ok := s.Fresh(k, p); ok {
		t.Error("Fresh after a purge: ok")
	}

	nk := Key{Tenant: "a", Resource: "r", Variant: "missing"}
	negative := func(context.Context) (*Entry, error) { return NewEntry([]byte("nope"), "text/plain", true, now()), nil }
	if _, _, err := s.Get(context.Background(), nk, p, negative); err != nil {
		t.Fatal(err)
	}
	if _, o, _, ok := s.Fresh(nk, p); !ok || o != Negative {
		t.Errorf("Fresh on a live negative = %v, %v; want Negative", o, ok)
	}
	clk = clk.Add(p.NegativeTTL)
	if _, _, _, ok := s.Fresh(nk, p); ok {
		t.Error("Fresh on an expired negative: ok")
	}
}
