package cache

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dgraph-io/ristretto/v2"
	"github.com/google/go-cmp/cmp"
)

// peekTier is a memTier that Inspect can ask (InspectableTier), and whose
// Claim can hand over another process's fill.
type peekTier struct {
	*memTier
	peerFill *Entry // returned by Claim when set
}

func (t *peekTier) TierName() string { return "mem" }

func (t *peekTier) Peek(_ context.Context, k Key) (*Entry, uint64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.m[k]
	if !ok {
		return nil, 0, nil
	}
	c := *v.e
	return &c, v.gen, nil
}

func (t *peekTier) Claim(context.Context, Key) (*Entry, uint64, error) {
	if t.peerFill != nil {
		c := *t.peerFill
		return &c, 0, nil
	}
	return nil, 0, nil
}

func TestInspectFirstTier(t *testing.T) {
	clock := newClock()
	s := newStore(t, Options{Now: clock.Now})
	l := newLoader(clock)
	ctx := context.Background()
	type view struct {
		Held             bool
		State, Purged    string
		Next, From       string
		Purge, PurgeMode string
	}
	look := func(k Key) view {
		in := s.Inspect(ctx, k, pol)
		v := view{Next: in.Next, From: in.From}
		if in.First != nil {
			v.Held, v.State, v.Purged = true, in.First.State, in.First.Purged
		}
		if in.Purge != nil {
			v.Purge, v.PurgeMode = in.Purge.Tenant+"/"+in.Purge.Resource, in.Purge.Mode.String()
		}
		if in.Why == "" && v.Next != "hit" {
			t.Errorf("%v: next %s and no reason", k, v.Next)
		}
		return v
	}
	if got, want := look(key), (view{Next: "miss", From: "backend"}); got != want {
		t.Errorf("never filled: %+v, want %+v", got, want)
	}
	if in := s.Inspect(ctx, key, pol); in.Event != nil || in.Why == "" {
		t.Errorf("never filled: event %+v, why %q; want no event and a reason", in.Event, in.Why)
	}
	if _, _, err := s.Get(ctx, key, pol, l.load); err != nil {
		t.Fatal(err)
	}
	clock.Advance(10 * time.Second)
	in := s.Inspect(ctx, key, pol)
	if in.First == nil || in.First.Age != 10*time.Second || in.First.FreshFor != 50*time.Second || in.First.Bytes != 2 {
		t.Fatalf("filled 10s ago: first %+v, want age 10s, 50s fresh, 2 bytes", in.First)
	}
	if got, want := look(key), (view{Held: true, State: "fresh", Next: "hit", From: "first"}); got != want {
		t.Errorf("fresh: %+v, want %+v", got, want)
	}
	clock.Advance(time.Minute)
	if got, want := look(key), (view{Held: true, State: "stale", Next: "stale", From: "first"}); got != want {
		t.Errorf("past ttl: %+v, want %+v", got, want)
	}
	clock.Advance(10 * time.Minute)
	if got, want := look(key), (view{Held: true, State: "stale-if-error", Next: "miss", From: "backend"}); got != want {
		t.Errorf("past stale_while_revalidate: %+v, want %+v", got, want)
	}
	if _, _, err := s.Get(ctx, key, pol, l.load); err != nil { // refilled
		t.Fatal(err)
	}
	other := Key{Tenant: "summit", Resource: key.Resource, Scope: key.Scope, Variant: key.Variant}
	s.Purge("summit", "", Hard)
	s.Purge(key.Tenant, "", Soft)
	if got, want := look(key), (view{Held: true, State: "fresh", Purged: "soft", Next: "miss", From: "backend", Purge: "harbour/", PurgeMode: "soft"}); got != want {
		t.Errorf("soft-purged: %+v, want %+v", got, want)
	}
	s.Purge(key.Tenant, key.Resource, Hard)
	if got, want := look(key), (view{Held: true, State: "fresh", Purged: "hard", Next: "miss", From: "backend", Purge: "harbour/" + key.Resource, PurgeMode: "hard"}); got != want {
		t.Errorf("hard-purged: %+v, want %+v", got, want)
	}
	if got, want := look(other), (view{Next: "miss", From: "backend", Purge: "summit/", PurgeMode: "hard"}); got != want {
		t.Errorf("another tenant's key: %+v, want %+v (its own tenant's purge only)", got, want)
	}
}

func TestInspectEvents(t *testing.T) {
	t.Run("not admitted: the overlay", func(t *testing.T) {
		s := newStore(t, Options{})
		s.dropSets = true
		s.Get(context.Background(), key, pol, newLoader(nil).load)
		in := s.Inspect(context.Background(), key, pol)
		if in.First == nil || !in.First.Overlay || in.Next != "hit" {
			t.Errorf("first %+v, next %s; want held in the overlay, a hit", in.First, in.Next)
		}
	})
	t.Run("too large", func(t *testing.T) {
		s := newStore(t, Options{MaxBytes: 8 << 10})
		big := func(context.Context) (*Entry, error) {
			return NewEntry(make([]byte, 16<<10), "x", false, time.Now()), nil
		}
		s.Get(context.Background(), key, pol, big)
		in := s.Inspect(context.Background(), key, pol)
		if in.First != nil || in.Event == nil || in.Event.What != EventTooLarge || in.Why != eventWhy[EventTooLarge] {
			t.Errorf("first %+v, event %+v, why %q; want none held, too-large", in.First, in.Event, in.Why)
		}
	})
	t.Run("pushed out of the overlay", func(t *testing.T) {
		s := newStore(t, Options{OverlayEntries: 1})
		s.dropSets = true
		other := Key{Tenant: key.Tenant, Resource: "other"}
		s.Get(context.Background(), key, pol, newLoader(nil).load)
		s.Get(context.Background(), other, pol, newLoader(nil).load)
		in := s.Inspect(context.Background(), key, pol)
		if in.First != nil || in.Event == nil || in.Event.What != EventOverlayFull {
			t.Errorf("first %+v, event %+v; want none held, overlay-full", in.First, in.Event)
		}
	})
	t.Run("evicted and expired", func(t *testing.T) {
		s := newStore(t, Options{})
		e := NewEntry([]byte("x"), "x", false, t0)
		for _, tc := range []struct {
			exp  time.Time
			want string
		}{{time.Time{}, EventEvicted}, {t0, EventExpired}} {
			s.onEvict(&ristretto.Item[*item]{Value: &item{key: key, hash: s.hash(key), entry: e}, Expiration: tc.exp})
			if in := s.Inspect(context.Background(), key, pol); in.Event == nil || in.Event.What != tc.want {
				t.Errorf("eviction with expiration %v: event %+v, want %s", tc.exp, in.Event, tc.want)
			}
		}
	})
}

func TestInspectSecondTier(t *testing.T) {
	clock := newClock()
	tier := &peekTier{memTier: newMemTier()}
	gens := &memGenerations{}
	a := newStore(t, Options{Now: clock.Now, SecondTier: tier, Generations: gens})
	b := newStore(t, Options{Now: clock.Now, SecondTier: tier, Generations: gens})
	ctx := context.Background()
	if a.TierName() != "mem" {
		t.Errorf("TierName = %q, want mem", a.TierName())
	}
	if _, o, src, err := a.GetSource(ctx, key, pol, newLoader(clock).load); err != nil || o != Miss || src != FromFirst {
		t.Fatalf("first fill: %v %v %v; want a miss of this process", o, src, err)
	}
	in := b.Inspect(ctx, key, pol)
	if in.First != nil || in.Second == nil || in.SecondTier != "mem" || in.Next != "hit" || in.From != "mem" {
		t.Errorf("another process: first %+v, second %+v (%s), next %s from %s; want the second tier's hit", in.First, in.Second, in.SecondTier, in.Next, in.From)
	}
	if _, o, src, err := b.GetSource(ctx, key, pol, mustNotLoad(t)); err != nil || o != Hit || src != FromSecond {
		t.Errorf("other process's Get: %v %v %v; want a hit from the second tier", o, src, err)
	}
	if _, o, src, _ := b.GetSource(ctx, key, pol, mustNotLoad(t)); o != Hit || src != FromFirst {
		t.Errorf("next Get: %v %v; want a first-tier hit", o, src)
	}
	b.Purge(key.Tenant, "", Soft)
	if in := a.Inspect(ctx, key, pol); in.Second == nil || in.Second.Purged != "soft" || in.First.Purged != "soft" || in.Next != "miss" {
		t.Errorf("after a soft purge: first %+v, second %+v, next %s; want both soft-purged, a miss", in.First, in.Second, in.Next)
	}

	// Past its freshness, with the loader failing: the second tier's copy
	// answers stale-if-error.
	c := newStore(t, Options{Now: clock.Now, SecondTier: tier, Generations: gens})
	other := Key{Tenant: "summit", Resource: "r"}
	if _, _, err := a.Get(ctx, other, pol, newLoader(clock).load); err != nil {
		t.Fatal(err)
	}
	clock.Advance(pol.TTL + pol.StaleWhileRevalidate + time.Second)
	fail := func(context.Context) (*Entry, error) { return nil, errBackend }
	if _, o, src, err := c.GetSource(ctx, other, pol, fail); err != nil || o != StaleIfError || src != FromSecond {
		t.Errorf("failed fill: %v %v %v; want stale-if-error from the second tier", o, src, err)
	}

	// Another process's fill, waited for through Claim.
	tier.peerFill = NewEntry([]byte("peer"), "x", false, clock.Now())
	third := Key{Tenant: "summit", Resource: "peer"}
	if e, o, src, err := c.GetSource(ctx, third, pol, mustNotLoad(t)); err != nil || o != Miss || src != FromPeer || body(e) != "peer" {
		t.Errorf("peer fill: %q %v %v %v; want the peer's body, a miss from a peer", body(e), o, src, err)
	}
	tier.peerFill = nil
	if _, o, src, err := c.GetSource(ctx, Key{Tenant: "x"}, pol, fail); !errors.Is(err, errBackend) || o != Miss || src != FromFirst {
		t.Errorf("failed fill, nothing stored: %v %v %v; want the error", o, src, err)
	}
}

func TestKeysListsOneTenantsKeysInPages(t *testing.T) {
	s := newStore(t, Options{})
	ctx := context.Background()
	var want []string
	for _, tenant := range []string{"harbour", "harbourside", "summit"} {
		for _, scope := range []string{"full|au|json", "none|au|xml"} {
			for _, v := range []string{"properties?limit=1", "properties?limit=2"} {
				k := Key{Tenant: tenant, Resource: "properties", Scope: scope, Variant: v}
				if _, _, err := s.Get(ctx, k, pol, newLoader(nil).load); err != nil {
					t.Fatal(err)
				}
				if tenant == "harbour" {
					want = append(want, k.String())
				}
			}
		}
	}
	var got []string
	after := ""
	for pages := 0; ; pages++ {
		keys, more, err := s.Keys("harbour", after, 3)
		if err != nil || len(keys) == 0 || pages > 2 {
			t.Fatalf("page %d after %q: %d keys, %v", pages, after, len(keys), err)
		}
		for _, k := range keys {
			if k.Key.Tenant != "harbour" {
				t.Errorf("listed %v for harbour", k.Key)
			}
			got = append(got, k.Key.String())
		}
		if !more {
			break
		}
		after = got[len(got)-1]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("harbour's keys (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"summit|properties|full|au|json|x", "harbour|nonsense", "harbour|properties|x"} {
		if _, _, err := s.Keys("harbour", bad, 3); !errors.Is(err, ErrBadCursor) {
			t.Errorf("Keys after %q: %v, want ErrBadCursor", bad, err)
		}
	}
	s.Purge("harbour", "", Hard)
	if keys, _, _ := s.Keys("harbour", "", 10); len(keys) != 0 {
		t.Errorf("after a hard purge: %d keys listed, want none", len(keys))
	}
}

func TestMatching(t *testing.T) {
	s := newStore(t, Options{})
	ctx := context.Background()
	tagged := func(tags ...Tag) Loader {
		return func(context.Context) (*Entry, error) {
			e := NewEntry([]byte("b"), "x", false, time.Now())
			e.Tags = tags
			return e, nil
		}
	}
	for _, k := range []struct {
		tenant, res string
		tags        []Tag
	}{{"harbour", "properties", []Tag{1, 2}}, {"harbour", "property", []Tag{2}}, {"harbour", "agents", nil}, {"summit", "properties", []Tag{1}}} {
		if _, _, err := s.Get(ctx, Key{Tenant: k.tenant, Resource: k.res}, pol, tagged(k.tags...)); err != nil {
			t.Fatal(err)
		}
	}
	many := make([]Tag, 20)
	for i := range many {
		many[i] = Tag(100 + i)
	}
	for _, tc := range []struct {
		p    Purge
		want int
	}{
		{Purge{All: true}, 4},
		{Purge{Tenant: "harbour"}, 3},
		{Purge{Tenant: "harbour", Resource: "property"}, 1},
		{Purge{Tenant: "harbour", Tags: []Tag{2}}, 2},
		{Purge{Tenant: "harbour", Tags: append(many, 1)}, 1},
		{Purge{Tenant: "summit", Tags: []Tag{2}}, 0},
		{Purge{Tenant: "nobody"}, 0},
	} {
		if got := s.Matching(tc.p); got != tc.want {
			t.Errorf("Matching(%+v) = %d, want %d", tc.p, got, tc.want)
		}
	}
	s.Purge("harbour", "property", Hard)
	if got := s.Matching(Purge{Tenant: "harbour"}); got != 2 {
		t.Errorf("after a hard purge of property: Matching(harbour) = %d, want 2 (the purged entry no longer counts)", got)
	}
}
