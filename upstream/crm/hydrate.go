package crm

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"time"

	lrucache "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/errgroup"

	"listingproxy/normalize"
	"listingproxy/upstream"
	"listingproxy/wire"
)

// docKey identifies a property document. The tenant is part of the key: one
// tenant's document is never served to another.
type docKey struct {
	tenant, country string
	id              int64
}

func (k docKey) flightKey() string {
	return strconv.Quote(k.tenant) + "|" + k.country + "|" + strconv.FormatInt(k.id, 10)
}

// memoKey identifies a full-detail list query, for HydrateAuto.
type memoKey struct {
	tenant, country, criteria string
}

// shouldHydrate applies Options.Hydrate to one full-detail list.
func (c *Client) shouldHydrate(s upstream.Scope, key string) bool {
	switch c.hydrate {
	case HydrateAlways:
		return true
	case HydrateNever:
		return false
	}
	if c.docTTL <= 0 {
		return false
	}
	now := c.now()
	ids, at, ok := c.memos.get(memoKey{s.Tenant, s.Country, key})
	if !ok || now.Sub(at) >= c.docTTL || len(ids) == 0 {
		return false
	}
	hits := 0
	for _, id := range ids {
		if _, at, ok := c.docs.get(docKey{s.Tenant, s.Country, id}); ok && now.Sub(at) < c.docTTL {
			hits++
		}
	}
	return hits*100 >= len(ids)*autoHitPercent
}

// seed keeps the documents of a full list for later hydrations. A property
// of a detail=full list carries the same fields as its single document.
func (c *Client) seed(s upstream.Scope, key string, props []upstream.Property) {
	now := c.now()
	ids := make([]int64, len(props))
	for i, p := range props {
		ids[i] = p.ID
		c.docs.put(docKey{s.Tenant, s.Country, p.ID}, cloneProperty(p), now)
	}
	c.memos.put(memoKey{s.Tenant, s.Country, key}, ids, now)
}

// hydrated answers a full-detail list with a short list plus one document
// per property, in list order; properties whose document is gone are
// dropped.
func (c *Client) hydrated(ctx context.Context, s upstream.Scope, q url.Values, key string) ([]upstream.Property, error) {
	short, err := c.fetchPropertyList(ctx, s, q, normalize.Short)
	if err != nil {
		return nil, err
	}
	docs := make([]upstream.Property, len(short))
	found := make([]bool, len(short))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(c.hydrateConc)
	for i, ref := range short {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			p, err := c.doc(gctx, s, ref.ID, ref.LastUpdated)
			switch {
			case errors.Is(err, upstream.ErrNotFound):
				return nil
			case err != nil:
				return fmt.Errorf("property %d: %w", ref.ID, err)
			}
			p.Legacy = wire.InList(p.Legacy, ref.Legacy) // the list keeps the short list's root namespace
			docs[i], found[i] = p, true
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil { // the loop may have stopped early
		return nil, err
	}
	out := docs[:0]
	ids := make([]int64, 0, len(short))
	for i := range docs {
		if found[i] {
			out = append(out, docs[i])
			ids = append(ids, docs[i].ID)
		}
	}
	if c.docTTL > 0 {
		c.memos.put(memoKey{s.Tenant, s.Country, key}, ids, c.now())
	}
	return out, nil
}

// doc returns the full document of property id, reused from the cache when
// it is younger than DocTTL and was last updated at seen (zero: unknown).
// Concurrent fetches of one document share one upstream call, which runs
// detached from any one caller's cancellation (bounded by Timeout), so one
// caller giving up never fails the others; each caller still returns as
// soon as its own ctx is done.
func (c *Client) doc(ctx context.Context, s upstream.Scope, id int64, seen time.Time) (upstream.Property, error) {
	k := docKey{s.Tenant, s.Country, id}
	if c.docTTL > 0 {
		if p, at, ok := c.docs.get(k); ok && c.now().Sub(at) < c.docTTL && (seen.IsZero() || p.LastUpdated.Equal(seen)) {
			c.stats.docHits.Add(1)
			return cloneProperty(p), nil
		}
	}
	detached := context.WithoutCancel(ctx)
	ch := c.flights.DoChan(k.flightKey(), func() (any, error) {
		c.stats.docFetches.Add(1)
		p, err := c.fetchPropertyDoc(detached, s, id)
		if err == nil && c.docTTL > 0 {
			c.docs.put(k, p, c.now())
		}
		return p, err
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return upstream.Property{}, r.Err
		}
		return cloneProperty(r.Val.(upstream.Property)), nil
	case <-ctx.Done():
		return upstream.Property{}, ctx.Err()
	}
}

// cloneProperty copies p's slices, so cached documents stay immutable.
func cloneProperty(p upstream.Property) upstream.Property {
	p.Photos = slices.Clone(p.Photos)
	p.VirtualTours = slices.Clone(p.VirtualTours)
	p.Floorplans = slices.Clone(p.Floorplans)
	p.Agents = slices.Clone(p.Agents)
	p.OpenHomes = slices.Clone(p.OpenHomes)
	return p
}

// lru is a bounded map that forgets its least recently used entries
// (hashicorp/golang-lru), each value kept with the time it was stored.
type lru[K comparable, V any] struct {
	c *lrucache.Cache[K, stamped[V]]
}

type stamped[V any] struct {
	val V
	at  time.Time
}

func newLRU[K comparable, V any](max int) *lru[K, V] {
	c, err := lrucache.New[K, stamped[V]](max)
	if err != nil {
		panic(err) // max is one of this package's positive constants
	}
	return &lru[K, V]{c: c}
}

// get returns the value stored under k and when it was stored.
func (l *lru[K, V]) get(k K) (v V, at time.Time, ok bool) {
	e, ok := l.c.Get(k)
	return e.val, e.at, ok
}

func (l *lru[K, V]) put(k K, v V, at time.Time) { l.c.Add(k, stamped[V]{v, at}) }
