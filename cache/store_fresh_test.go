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

// TestFreshHashed: FreshHashed with a Variant's VariantHash answers as
// Fresh does, and a hash that leads it to another key's item (another
// tenant's, or another permission level's scope, with the same Variant)
// finds nothing: the lookup compares the whole Key, so a caller's wrong
// hash costs a miss, never another key's body.
func TestFreshHashed(t *testing.T) {
	s := newStore(t, Options{MaxBytes: 1 << 20})
	p := Policy{TTL: time.Hour}
	const variant = "detail=full|limit=1"
	keys := []Key{
		{Tenant: "harbour", Resource: "properties", Scope: "full|au|xml", Variant: variant},
		{Tenant: "summit", Resource: "properties", Scope: "full|au|xml", Variant: variant},
		{Tenant: "harbour", Resource: "properties", Scope: "short|au|xml", Variant: variant},
	}
	for _, k := range keys {
		want := k.Tenant + " " + k.Scope
		if _, _, err := s.Get(context.Background(), k, p, func(context.Context) (*Entry, error) {
			return NewEntry([]byte(want), "text/plain", false, time.Now()), nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	s.Wait()
	vh := s.VariantHash(variant)
	for _, k := range keys {
		e, o, _, ok := s.FreshHashed(k, vh, p)
		if want := k.Tenant + " " + k.Scope; !ok || o != Hit || body(e) != want {
			t.Errorf("FreshHashed(%v) = %q, %v, %v; want %q, a hit", k, body(e), o, ok, want)
		}
		if e, _, _, ok := s.FreshHashed(k, vh+1, p); ok {
			t.Errorf("FreshHashed(%v) with a wrong hash = %q, want nothing", k, body(e))
		}
	}
	// A hash chosen to land on harbour's full-detail item, for each of
	// the other keys: the item is there, its key is not theirs.
	target := s.hash(keys[0])
	for _, k := range keys[1:] {
		forged := s.hashWith(k, 0) ^ target
		if s.hashWith(k, forged) != target {
			t.Fatalf("forged hash for %v does not land on %v", k, keys[0])
		}
		if e, _, _, ok := s.FreshHashed(k, forged, p); ok {
			t.Errorf("FreshHashed(%v) on %v's item = %q, want nothing", k, keys[0], body(e))
		}
	}
}
