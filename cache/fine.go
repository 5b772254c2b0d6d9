package cache

import (
	"sync"
	"time"
)

// Tag names something an entry's body holds or answers for: an entity it
// renders (a property, an agent) or the request it answers (a URL in every
// permission level and format). The Loader lists them in Entry.Tags; a
// purge with Purge.Tags covers the entries of its tenant that carry any of
// them. Tags are a deterministic hash (the same in every process, so a
// fleet exchanges them): two different names sharing a tag cost an extra
// purge, never a wrong body.
type Tag uint64

// NewTag returns the tag of the names in parts, e.g.
// NewTag("url", resource, country, criteria).
func NewTag(parts ...string) Tag {
	h := uint64(fnvOffset)
	for _, p := range parts {
		h = fnvUint(h, uint64(len(p)))
		for i := 0; i < len(p); i++ {
			h = (h ^ uint64(p[i])) * fnvPrime
		}
	}
	return Tag(h)
}

// IDTag returns the tag of the entity kind (e.g. "property") with id:
// IDTag(kind, id) is NewTag(kind, decimal id) without formatting it.
func IDTag(kind string, id int64) Tag {
	h := uint64(fnvOffset)
	h = fnvUint(h, uint64(len(kind)))
	for i := 0; i < len(kind); i++ {
		h = (h ^ uint64(kind[i])) * fnvPrime
	}
	return Tag(fnvUint(fnvUint(h, 0xFFFF_FFFF_FFFF_FFFF), uint64(id)))
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvUint(h, v uint64) uint64 {
	for range 8 {
		h = (h ^ (v & 0xFF)) * fnvPrime
		v >>= 8
	}
	return h
}

// DefaultRecordLifetime is how long the record of a purge by tags is kept
// when Options.RecordLifetime is zero.
const DefaultRecordLifetime = 24 * time.Hour

// DefaultMaxRecords bounds the records of purges by tags kept in a process
// when Options.MaxRecords is zero.
const DefaultMaxRecords = 100_000

// Marks an item's state carries in its two low bits: what a purge by tags
// did to it. The other bits are the tenant's fine epoch it was last
// checked against.
const (
	markNone = iota
	markSoft
	markHard
)

// tagKey is one record's scope: a tag of a tenant.
type tagKey struct {
	tenant string
	tag    Tag
}

// tagRecord is a record's epochs and when it was (last) made.
type tagRecord struct {
	epochs
	at time.Time
}

// tagRecords are the epochs of recent purges by tags, per tenant and tag:
// a fill consults them before it is stored and an item is checked against
// them once after each purge by tags of its tenant, never on every hit. A
// record is kept for the longest entry lifetime (an entry filled before it
// is dead by then) and their count is bounded: the oldest record past the
// bound is folded into its tenant's generations (a purge of the whole
// tenant at its epochs: more is purged, nothing wrongly kept).
type tagRecords struct {
	mu    sync.RWMutex
	m     map[tagKey]tagRecord
	queue []queued // insertion order; may hold keys recorded again since
}

// covered says what the records do to a body of tenant carrying tags,
// filled at generation gen: markHard, markSoft or markNone.
func (r *tagRecords) covered(tenant string, tags []Tag, gen uint64) uint32 {
	if len(tags) == 0 {
		return markNone
	}
	mark := uint32(markNone)
	r.mu.RLock()
	defer r.mu.RUnlock()
	if len(r.m) == 0 {
		return markNone
	}
	for _, t := range tags {
		rec, ok := r.m[tagKey{tenant, t}]
		switch {
		case !ok:
		case rec.hard > gen:
			return markHard
		case rec.fill > gen:
			mark = markSoft
		}
	}
	return mark
}

// add records e for tenant's tags at now and applies the bounds: records
// older than life are dropped, and while more than max are kept the
// oldest are removed and returned, for the caller to fold into their
// tenants' generations.
func (r *tagRecords) add(tenant string, tags []Tag, e epochs, now time.Time, life time.Duration, max int) (folded []tagRecordOf) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[tagKey]tagRecord{}
	}
	for _, t := range tags {
		k := tagKey{tenant, t}
		old, ok := r.m[k]
		r.m[k] = tagRecord{old.epochs.join(e), now}
		if !ok || !old.at.Equal(now) {
			r.queue = append(r.queue, queued{k, now})
		}
	}
	for len(r.queue) > 0 {
		q := r.queue[0]
		rec, ok := r.m[q.key]
		owns := ok && rec.at.Equal(q.at) // else recorded again since: a later slot owns it
		live := rec.at.After(now.Add(-life))
		if owns && live && len(r.m) <= max {
			break
		}
		if owns {
			if live {
				folded = append(folded, tagRecordOf{q.key.tenant, rec.epochs})
			}
			delete(r.m, q.key)
		}
		r.queue[0] = queued{}
		r.queue = r.queue[1:]
	}
	if len(r.queue) > 2*len(r.m)+1024 {
		// Keys recorded again and again (one listing edited all day)
		// leave a slot each: keep only the slots that own their record.
		q := make([]queued, 0, len(r.m))
		for _, s := range r.queue {
			if rec, ok := r.m[s.key]; ok && rec.at.Equal(s.at) {
				q = append(q, s)
			}
		}
		r.queue = q
	}
	return folded
}

// queued is a slot of the records' queue: the key and the time it was
// recorded at.
type queued struct {
	key tagKey
	at  time.Time
}

// tagRecordOf is a record folded out of the table: its tenant and epochs.
type tagRecordOf struct {
	tenant string
	epochs
}

func (r *tagRecords) len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.m)
}
