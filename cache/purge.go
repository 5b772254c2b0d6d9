package cache

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// PurgeMode says what a purge does to the entries it covers.
type PurgeMode uint8

const (
	// Soft makes the entries stale at once: the next Get waits for a fill
	// as on a miss (it is not answered stale-while-revalidate), and gets
	// the old body, as StaleIfError, only if that fill fails while the
	// entry is within TTL + StaleIfError of its StoredAt (NegativeTTL +
	// StaleIfError for a not-found answer).
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
// fine, in a tenant's record only, is the epoch of the tenant's latest
// purge by tags: items filled before it are checked against the tag
// records once (see Store.judge).
type epochs struct{ fill, hard, fine uint64 }

// join is the componentwise maximum: a key is covered by the purges of its
// store, its tenant and its resource.
func (e epochs) join(o epochs) epochs {
	return epochs{max(e.fill, o.fill), max(e.hard, o.hard), max(e.fine, o.fine)}
}

// covers reports whether e makes o redundant.
func (e epochs) covers(o epochs) bool {
	return o.fill <= e.fill && o.hard <= e.hard && o.fine <= e.fine
}

// flight is the generation a fill started now runs at: after every purge
// that covers the key, by tags included, so that a request after any of
// them never joins a fill that started before.
func (e epochs) flight() uint64 { return max(e.fill, e.fine) }

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
func (s *Store) genOf(k Key) epochs { return s.gens.Load().of(k) }

// of is k's epochs under g (none before the first purge: g nil).
func (g *generations) of(k Key) epochs {
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

// PurgeTags purges the entries of tenant that carry any of tags (see
// Entry.Tags) as Purge does: an entity's every body, lists included, or
// one URL's bodies for every caller.
func (s *Store) PurgeTags(tenant string, tags []Tag, mode PurgeMode) {
	_ = s.PurgeContext(context.Background(), Purge{Tenant: tenant, Tags: tags, Mode: mode})
}

// PurgeContext purges as Purge, PurgeAll and PurgeTags do (p.Epoch and
// p.Lifetime are ignored). It returns an error when Options.Generations
// could not record the purge for the other processes: it was then applied
// to this Store only, and, when the error wraps ErrPurgePending,
// Generations goes on trying to record it.
func (s *Store) PurgeContext(ctx context.Context, p Purge) error {
	switch {
	case p.All:
		p.Tenant, p.Resource, p.Tags = "", "", nil
	case len(p.Tags) > 0:
		p.Resource = ""
	}
	p.Lifetime = s.recordLife()
	s.purgeMu.Lock()
	after := s.epoch
	s.purgeMu.Unlock()
	epoch, err := s.generations.Purge(ctx, p, after)
	if err != nil || epoch <= after {
		if err == nil {
			err = fmt.Errorf("cache: generations returned epoch %d, not after %d", epoch, after)
		}
		msg := "cache: purge applied to this process only"
		if errors.Is(err, ErrPurgePending) {
			msg = "cache: purge applied to this process; recording it for the others is pending"
		}
		s.log.Warn(msg, "tenant", p.Tenant, "resource", p.Resource, "tags", len(p.Tags), "mode", p.Mode.String(), "err", err)
		epoch = after + 1
	}
	p.Epoch = epoch
	s.apply(p)
	s.purges.add(p, s.now(), false)
	s.st.purges[p.Mode&1].Add(1)
	return err
}

// received applies a purge delivered by Generations.Watch.
func (s *Store) received(p Purge) {
	s.apply(p)
	s.purges.add(p, s.now(), true)
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
	var folded []tagRecordOf
	if len(p.Tags) > 0 && !p.All {
		// The records first: a reader that sees the tenant's new fine
		// epoch finds them.
		folded = s.tags.add(p.Tenant, p.Tags, e, s.now(), s.recordLife(), s.maxRecords)
		e = epochs{fine: p.Epoch}
	}
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
	for _, f := range folded { // records over the bound: the whole tenant
		n.tenant[f.tenant] = n.tenant[f.tenant].join(epochs{fill: f.fill, hard: f.hard})
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
	if p.Mode == Hard && len(p.Tags) == 0 {
		s.ov.purge(p.Tenant, p.Resource, p.All)
	}
}

// recordLife is how long a record of a purge by tags is kept: the longest
// entry lifetime, configured or seen.
func (s *Store) recordLife() time.Duration {
	return max(s.recordLifetime, time.Duration(s.maxLife.Load()))
}

// judge says whether it may answer a lookup under the key's generations
// g, and whether it is current: not purged since its fill started. An item
// filled before its tenant's latest purge by tags is checked against the
// tag records once (recheck), and carries the result in its state: the
// hit path reads one word of the item, never the records.
// (lookup has the unmarked case inline: the hit path.)
func (s *Store) judge(it *item, g epochs) (_ *item, current bool) {
	st := it.state.Load()
	if st>>2 < g.fine {
		st = s.recheck(it)
	}
	switch st & 3 {
	case markHard:
		return nil, false
	case markSoft:
		return it, false
	}
	return it, it.gen >= g.fill
}

// recheck checks it against the tag records and its tenant's fine epoch
// as they are now, and returns its new state.
func (s *Store) recheck(it *item) uint64 {
	fine := s.genOf(it.key).fine // before the records: add writes them first
	mark := uint64(s.tags.covered(it.key.Tenant, it.entry.Tags, it.gen))
	for {
		old := it.state.Load()
		n := max(old>>2, fine)<<2 | max(old&3, mark)
		if it.state.CompareAndSwap(old, n) {
			return n
		}
	}
}
