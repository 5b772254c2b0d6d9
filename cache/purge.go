package cache

import (
	"context"
	"fmt"
)

// PurgeMode says what a purge does to the entries it covers.
type PurgeMode uint8

const (
	// Soft makes the entries stale at once: the next Get waits for a fill
	// as on a miss (it is not answered stale-while-revalidate), and gets
	// the old body, as StaleIfError, only if that fill fails while the
	// entry is within TTL + StaleIfError of its StoredAt. Negative entries
	// have no stale phase: a soft purge drops them.
	Soft PurgeMode = iota
	// Hard drops the entries: no later Get is answered with them, even
	// when its fill fails.
	Hard
)

// String returns "soft" or "hard".
func (m PurgeMode) String() string {
	if m == Hard {
		return "hard"
	}
	return "soft"
}

// epochs are the generations of one scope: fill is the epoch of the latest
// purge of either mode, hard that of the latest hard purge (hard <= fill).
type epochs struct{ fill, hard uint64 }

// join is the componentwise maximum: a key is covered by the purges of its
// store, its tenant and its resource.
func (e epochs) join(o epochs) epochs {
	return epochs{max(e.fill, o.fill), max(e.hard, o.hard)}
}

// covers reports whether e makes o redundant.
func (e epochs) covers(o epochs) bool { return o.fill <= e.fill && o.hard <= e.hard }

// generations records the epochs of the latest purges for the whole store,
// per tenant and per tenant resource. Copy-on-write: never modified once
// published.
type generations struct {
	all      epochs
	tenant   map[string]epochs
	resource map[tenantResource]epochs
}

type tenantResource struct{ tenant, resource string }

// genOf is k's generations: the epochs of the latest purges that cover it.
func (s *Store) genOf(k Key) epochs {
	g := s.gens.Load()
	if g == nil {
		return epochs{}
	}
	return g.all.join(g.tenant[k.Tenant]).join(g.resource[tenantResource{k.Tenant, k.Resource}])
}

// Purge purges a tenant's entries: every entry of the tenant when resource
// is "", else those of that resource. A Soft purge makes them stale, a Hard
// purge drops them (see PurgeMode). Either way, fills that started before
// the purge are neither stored nor served to requests that arrive after it.
// With a shared Generations the purge reaches every process; if it cannot
// be recorded there it is still applied here, and logged (PurgeContext
// reports it).
func (s *Store) Purge(tenant, resource string, mode PurgeMode) {
	_ = s.PurgeContext(context.Background(), Purge{Tenant: tenant, Resource: resource, Mode: mode})
}

// PurgeAll purges every entry of every tenant, as Purge does.
func (s *Store) PurgeAll(mode PurgeMode) {
	_ = s.PurgeContext(context.Background(), Purge{All: true, Mode: mode})
}

// PurgeContext purges as Purge and PurgeAll do (p.Epoch is ignored). It
// returns an error when Options.Generations could not record the purge
// for the other processes: it was then applied to this Store only.
func (s *Store) PurgeContext(ctx context.Context, p Purge) error {
	if p.All {
		p.Tenant, p.Resource = "", ""
	}
	s.purgeMu.Lock()
	after := s.epoch
	s.purgeMu.Unlock()
	epoch, err := s.generations.Purge(ctx, p, after)
	if err != nil || epoch <= after {
		if err == nil {
			err = fmt.Errorf("cache: generations returned epoch %d, not after %d", epoch, after)
		}
		s.log.Warn("cache: purge applied to this process only", "tenant", p.Tenant, "resource", p.Resource, "mode", p.Mode.String(), "err", err)
		epoch = after + 1
	}
	p.Epoch = epoch
	s.apply(p)
	s.st.purges[p.Mode&1].Add(1)
	return err
}

// received applies a purge delivered by Generations.Watch.
func (s *Store) received(p Purge) {
	s.apply(p)
	s.st.purgesReceived.Add(1)
}

// apply records p in the generation tables. Idempotent: tables only grow
// towards larger epochs.
func (s *Store) apply(p Purge) {
	e := epochs{fill: p.Epoch}
	if p.Mode == Hard {
		e.hard = p.Epoch
	}
	s.purgeMu.Lock()
	s.epoch = max(s.epoch, p.Epoch)
	old := s.gens.Load()
	if old == nil {
		old = &generations{}
	}
	n := &generations{
		all:      old.all,
		tenant:   make(map[string]epochs, len(old.tenant)+1),
		resource: make(map[tenantResource]epochs, len(old.resource)+1),
	}
	if p.All {
		n.all = n.all.join(e)
	}
	// Keep only records that the broader ones have not overtaken in both
	// epochs.
	for t, g := range old.tenant {
		if !n.all.covers(g) {
			n.tenant[t] = g
		}
	}
	if !p.All && p.Resource == "" {
		n.tenant[p.Tenant] = n.tenant[p.Tenant].join(e)
	}
	for tr, g := range old.resource {
		if !n.all.join(n.tenant[tr.tenant]).covers(g) {
			n.resource[tr] = g
		}
	}
	if !p.All && p.Resource != "" {
		tr := tenantResource{p.Tenant, p.Resource}
		n.resource[tr] = n.resource[tr].join(e)
	}
	s.gens.Store(n)
	s.purgeMu.Unlock()
	if p.Mode == Hard {
		s.ov.purge(p.Tenant, p.Resource, p.All)
	}
}
