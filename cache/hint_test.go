package cache

import (
	"context"
	"testing"
	"time"
)

// TestHint: a Hint answers its key's fresh entry as FreshHashed does (each
// key's own: other tenants', other permission levels'), and nothing once
// anything could have changed the answer: an expired entry, its item
// replaced by a new fill, any purge
// (soft, hard, by tags, of another tenant), the item leaving ristretto
// (whose Hint record is then cleared, so a kept Hint holds no body), a
// closed store. The zero Hint finds nothing.
func TestHint(t *testing.T) {
	clk := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newStore(t, Options{MaxBytes: 1 << 20, Now: func() time.Time { return clk }})
	p := Policy{TTL: time.Minute}
	const variant = "detail=full|limit=1"
	keys := []Key{
		{Tenant: "harbour", Resource: "properties", Scope: "full|au|xml", Variant: variant},
		{Tenant: "summit", Resource: "properties", Scope: "full|au|xml", Variant: variant},
		{Tenant: "harbour", Resource: "properties", Scope: "short|au|xml", Variant: variant},
	}
	fill := func() {
		t.Helper()
		for _, k := range keys {
			want := k.Tenant + " " + k.Scope
			if _, _, err := s.Get(context.Background(), k, p, func(context.Context) (*Entry, error) {
				return NewEntry([]byte(want), "text/plain", false, clk), nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		s.Wait()
	}
	hints := func() []Hint {
		t.Helper()
		hs := make([]Hint, len(keys))
		for i, k := range keys {
			e, o, _, h, ok := s.FreshHashedHint(k, s.VariantHash(k.Variant), p)
			if want := k.Tenant + " " + k.Scope; !ok || o != Hit || body(e) != want {
				t.Fatalf("FreshHashedHint(%v) = %q, %v, %v; want %q, a hit", k, body(e), o, ok, want)
			}
			if h == (Hint{}) {
				t.Fatalf("FreshHashedHint(%v): no Hint for an item ristretto holds", k)
			}
			hs[i] = h
		}
		return hs
	}
	fill()
	hs := hints()
	hits := s.Stats().Hits
	for i, k := range keys {
		if e, o, _, ok := s.FreshHint(hs[i], p); !ok || o != Hit || body(e) != k.Tenant+" "+k.Scope {
			t.Errorf("FreshHint(%v's Hint) = %q, %v, %v; want its body, a hit", k, body(e), o, ok)
		}
	}
	if got := s.Stats().Hits - hits; got != uint64(len(keys)) {
		t.Errorf("hits counted by FreshHint = %d, want %d (only those answered)", got, len(keys))
	}
	if _, _, _, ok := s.FreshHint(Hint{}, p); ok {
		t.Error("the zero Hint answered")
	}

	clk = clk.Add(p.TTL)
	if _, _, _, ok := s.FreshHint(hs[0], p); ok {
		t.Error("FreshHint on an expired entry: ok")
	}

	// The expired entries filled again: each new item replaces the old one
	// in ristretto, and the old Hints find nothing, not the new entries
	// (a Hint is its item's, whose key FreshHint does not compare).
	// (Checked at the old time, when the old entries would still be fresh.)
	fill()
	clk = clk.Add(-p.TTL)
	for i, k := range keys {
		if e, _, _, ok := s.FreshHint(hs[i], p); ok {
			t.Errorf("FreshHint(%v's Hint) after the item was replaced = %q, want nothing", k, body(e))
		}
	}

	for _, purge := range []struct {
		name string
		do   func()
	}{
		{"soft purge of the tenant", func() { s.Purge("harbour", "", Soft) }},
		{"hard purge of the resource", func() { s.Purge("harbour", "properties", Hard) }},
		{"purge by tags", func() { s.PurgeTags("harbour", []Tag{IDTag("property", 7)}, Soft) }},
		{"purge of another tenant", func() { s.Purge("other", "", Hard) }},
	} {
		fill()
		hs := hints()
		purge.do()
		for i, k := range keys {
			if e, _, _, ok := s.FreshHint(hs[i], p); ok {
				t.Errorf("%s: FreshHint(%v) = %q, want nothing (look up again)", purge.name, k, body(e))
			}
		}
	}

	fill()
	hs = hints()
	it := hs[0].ref.it.Load()
	s.onExit(it) // as ristretto does on eviction
	if hs[0].ref.it.Load() != nil || hs[0].ref.e.Load() != nil {
		t.Error("the Hint record still points to an item ristretto let go of, or to its entry")
	}
	if _, _, _, ok := s.FreshHint(hs[0], p); ok {
		t.Error("FreshHint after the item left ristretto: ok")
	}
	if h := s.hintOf(it, s.gens.Load()); h != (Hint{}) {
		t.Error("hintOf gave a Hint for an item ristretto let go of")
	}

	s.Close()
	if _, _, _, ok := s.FreshHint(hs[1], p); ok {
		t.Error("FreshHint on a closed store: ok")
	}
}
