package cache

import (
	"sync/atomic"
	"time"
)

// A Hint finds an entry again without a lookup: FreshHashedHint returns one
// with a fresh entry, and FreshHint answers from the same item while it is
// still the key's current item, under the same purges. A caller that keeps
// hints per request (the proxy's front memo, keyed by caller and request
// target) then reads, per hit, its own record, the item and the entry,
// instead of hashing the key and reading the index (bench/NOTES.md,
// "One lookup per hit").
//
// A Hint holds no entry: it points to a small record that the item points
// to in turn, cleared when ristretto lets go of the item (onExit), so a
// kept Hint never keeps an evicted body in memory. It is valid only as long
// as no purge of any scope has been published since it was taken: every
// purge replaces the Store's generations, and a Hint taken under other
// generations finds nothing (the caller looks up again and takes a new one).
// The zero Hint finds nothing.
type Hint struct {
	ref  *hintRef
	gens *generations
}

// hintRef is an item's target for Hints: it and its entry e until the
// item leaves ristretto, then nil, and the entry's StoredAt and Negative
// (which never change). A hit through a Hint decides freshness from this
// record alone, and once the item is hot (hits) it reads neither the item
// (but in its refresh window) nor, before the caller writes its body, the
// entry: the chain record, item, entry was three cold reads one after
// the other among many keys, and each of the last two was half of
// Store.fresh's samples under perf (bench/NOTES.md, "The hit's chain of
// cold reads").
type hintRef struct {
	it       atomic.Pointer[item]
	e        atomic.Pointer[Entry]
	storedAt time.Time
	negative bool
	// hits is the item's count of hits once a hit through a Hint found
	// it at a Policy's RefreshHits or more (it.dueAhead), else 0.
	hits atomic.Uint32
}

// FreshHashedHint is FreshHashed, and when it answers from an item that
// ristretto holds, a Hint for FreshHint (else the zero Hint).
func (s *Store) FreshHashedHint(k Key, vh uint64, p Policy) (_ *Entry, _ Outcome, now time.Time, h Hint, ok bool) {
	return s.freshHashed(k, vh, p, true)
}

// FreshHint is FreshHashed for the key of the item h was taken from, p
// being that key's Policy: the item's entry when ristretto still holds the
// item, no purge was published since h was taken, and the entry is fresh
// under p. When it is not ok the caller asks FreshHashedHint (a miss there
// fills as usual). It counts outcomes as FreshHashed does, only when ok.
//
// It takes no key: a Hint's record points to one item or to nothing, an
// item's key never changes, and an item replaced in ristretto for its key
// leaves it (onExit clears the record), so the key is known: comparing it
// again per hit could never fail.
func (s *Store) FreshHint(h Hint, p Policy) (_ *Entry, _ Outcome, now time.Time, ok bool) {
	if h.ref == nil || p.TTL <= 0 || s.closed.Load() || s.gens.Load() != h.gens {
		return nil, Miss, now, false
	}
	ref := h.ref
	it, e := ref.it.Load(), ref.e.Load()
	if it == nil || e == nil {
		return nil, Miss, now, false
	}
	if sampled() {
		s.c.Get(it.hash) // the admission policy's sample of accesses (see index)
	}
	return s.fresh(it, ref, e, ref.storedAt, ref.negative, p)
}

// hintOf returns a Hint for it under generations g, or the zero Hint when
// ristretto does not hold it. The record is published before the resident
// check, and onExit marks the item gone before it clears the record (both
// sequentially consistent), so either onExit clears a record given out
// here or no Hint is given.
func (s *Store) hintOf(it *item, g *generations) Hint {
	ref := it.hint.Load()
	if ref == nil {
		n := &hintRef{storedAt: it.entry.StoredAt, negative: it.entry.Negative}
		n.e.Store(it.entry)
		n.it.Store(it)
		if it.hint.CompareAndSwap(nil, n) {
			ref = n
		} else {
			ref = it.hint.Load()
		}
	}
	if it.resident.Load() != 1 {
		return Hint{}
	}
	return Hint{ref: ref, gens: g}
}

// unhint clears it's Hint record: it has left ristretto (resident 2).
// Clearing the entry as well lets a Hint kept after that hold no body.
func (it *item) unhint() {
	if ref := it.hint.Load(); ref != nil {
		ref.it.Store(nil)
		ref.e.Store(nil)
	}
}
