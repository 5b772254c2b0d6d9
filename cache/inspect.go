package cache

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// What the Store can say about one key, for an operator (Inspect, Keys,
// Matching): where its entry is, how old, what purges did to it, and
// what happened to it lately. None of it is on the hit path: the record of
// recent events is written where ristretto evicts or refuses an entry and
// where the overlay lets one go, and the record of purges where a purge
// is applied.

// InspectableTier is a SecondTier that Inspect can ask about a key.
type InspectableTier interface {
	// TierName names the tier for operators and Cache-Status: "shared"
	// (a fleet's Redis), "disk".
	TierName() string
	// Peek returns k's stored entry and the generation its fill started
	// at, as Get does, without counting the read in any statistic or
	// refreshing the entry's recency. A nil Entry: none.
	Peek(ctx context.Context, k Key) (*Entry, uint64, error)
}

// Source says where the entry a Get returned came from (GetSource).
type Source uint8

const (
	// FromFirst: this process's memory, or its own loader call (the
	// Outcome says which).
	FromFirst Source = iota
	// FromSecond: the second tier's stored entry (Options.SecondTier).
	FromSecond
	// FromPeer: another process's fill, waited for through the second
	// tier (SecondTier.Claim).
	FromPeer
)

// TierName returns the name of the second tier ("shared", "disk"), or ""
// when there is none or it cannot be inspected (see InspectableTier).
func (s *Store) TierName() string {
	if t, ok := s.tier.(InspectableTier); ok {
		return t.TierName()
	}
	return ""
}

// Bounds of the records Inspect reads.
const (
	// EventRecord is how many keys' latest first-tier events are kept at
	// most: one per EventRecordBytes of Options.MaxBytes, at least 64.
	// Each costs about 150 bytes outside MaxBytes (no key is kept, only
	// a hash of it), 0.23% of the budget.
	EventRecord      = 4096
	EventRecordBytes = 64 << 10
	// PurgeRecordSize is how many recent purges are kept.
	PurgeRecordSize = 256
	// maxRecordedTags bounds the tags a purge's record keeps.
	maxRecordedTags = 64
)

// Event kinds (KeyEvent.What).
const (
	// EventNotAdmitted: ristretto's admission policy refused the entry
	// just filled (or dropped the write); it was kept in the overlay when
	// it fit there.
	EventNotAdmitted = "not-admitted"
	// EventTooLarge: the entry costs more than the first tier's whole
	// budget; it was never held.
	EventTooLarge = "too-large"
	// EventEvicted: ristretto evicted the entry to make room.
	EventEvicted = "evicted"
	// EventExpired: the entry's lifetime (TTL plus the longer stale
	// window) ended and ristretto let it go.
	EventExpired = "expired"
	// EventOverlayFull: newer fills pushed the entry out of the overlay.
	EventOverlayFull = "overlay-full"
)

// KeyEvent is the latest thing recorded about a key's entry in the first
// tier.
type KeyEvent struct {
	// What is one of the Event kinds.
	What string
	// At is when it happened; StoredAt is when the entry it happened to
	// had been produced.
	At, StoredAt time.Time
}

// keyEvent is a KeyEvent as the record keeps it: small, and holding no
// string of the key (check, a second hash of it, tells keys apart).
type keyEvent struct {
	what         string // a constant
	at, storedAt int64  // Unix nanoseconds
	check        uint64
}

// keyEvents is the bounded record of recent events, by key hash.
type keyEvents struct {
	c    *lru.Cache[uint64, keyEvent]
	seed maphash.Seed
	size int
}

func newKeyEvents(maxBytes int64) keyEvents {
	n := int(min(max(maxBytes/EventRecordBytes, 64), EventRecord))
	c, _ := lru.New[uint64, keyEvent](n) // a positive size: no error
	return keyEvents{c: c, seed: maphash.MakeSeed(), size: n}
}

// check is the second hash of k that tells apart two keys of one hash.
func (e *keyEvents) check(k Key) uint64 {
	var h maphash.Hash
	h.SetSeed(e.seed)
	for _, f := range [...]string{k.Tenant, k.Resource, k.Scope, k.Variant} {
		h.WriteString(f)
		h.WriteByte(0)
	}
	return h.Sum64()
}

// get returns the latest event recorded for k, whose hash is h.
func (e *keyEvents) get(h uint64, k Key) (KeyEvent, bool) {
	ev, ok := e.c.Peek(h)
	if !ok || ev.check != e.check(k) {
		return KeyEvent{}, false
	}
	return KeyEvent{What: ev.what, At: time.Unix(0, ev.at).UTC(), StoredAt: time.Unix(0, ev.storedAt).UTC()}, true
}

// note records what happened to it now.
func (s *Store) note(it *item, what string) {
	if it == nil || it.entry == nil {
		return
	}
	s.events.c.Add(it.hash, keyEvent{what: what, at: s.now().UnixNano(), storedAt: it.entry.StoredAt.UnixNano(), check: s.events.check(it.key)})
}

// PurgeRecord is a purge applied here, as Inspect reports it.
type PurgeRecord struct {
	// At is when it was applied here.
	At time.Time
	// All, Tenant, Resource and Tags are its scope (see Purge); Tags
	// holds at most 64 of its TagCount tags.
	All              bool
	Tenant, Resource string
	Tags             []Tag
	TagCount         int
	Mode             PurgeMode
	// Received: delivered by Generations (another process's purge), not
	// made through this Store.
	Received bool

	epoch uint64
}

// covers reports whether r covers the entries of k that carry tags; known
// is false when r is by tags and its record kept only some of them.
func (r *PurgeRecord) covers(k Key, tags []Tag) (covers, known bool) {
	switch {
	case r.All:
		return true, true
	case r.Tenant != k.Tenant:
		return false, true
	case r.TagCount == 0:
		return r.Resource == "" || r.Resource == k.Resource, true
	}
	for _, t := range r.Tags {
		if slices.Contains(tags, t) {
			return true, true
		}
	}
	return false, r.TagCount <= len(r.Tags)
}

// purgeLog is the ring of recent purges.
type purgeLog struct {
	mu   sync.Mutex
	ring []PurgeRecord
	next int
}

// add records p, applied at now, unless it is already recorded (a
// purge of this process delivered back by Generations).
func (l *purgeLog) add(p Purge, now time.Time, received bool) {
	r := PurgeRecord{At: now, All: p.All, Tenant: p.Tenant, Resource: p.Resource, TagCount: len(p.Tags),
		Mode: p.Mode, Received: received, epoch: p.Epoch}
	if len(p.Tags) > 0 {
		r.Tags = slices.Clone(p.Tags[:min(len(p.Tags), maxRecordedTags)])
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range l.ring {
		o := &l.ring[i]
		if o.epoch == r.epoch && o.All == r.All && o.Tenant == r.Tenant && o.Resource == r.Resource && o.TagCount == r.TagCount && o.Mode == r.Mode {
			return
		}
	}
	if len(l.ring) < PurgeRecordSize {
		l.ring = append(l.ring, r)
		return
	}
	l.ring[l.next] = r
	l.next = (l.next + 1) % PurgeRecordSize
}

// latest returns the latest recorded purge after gen that covers the
// entries of k carrying tags, and whether the record could tell (a purge
// by more tags than it kept may cover them unseen).
func (l *purgeLog) latest(k Key, tags []Tag, gen uint64) (*PurgeRecord, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var best *PurgeRecord
	sure := true
	for i := range l.ring {
		r := &l.ring[i]
		if r.epoch <= gen {
			continue
		}
		c, known := r.covers(k, tags)
		sure = sure && known
		if c && (best == nil || r.epoch > best.epoch) {
			best = r
		}
	}
	if best == nil {
		return nil, sure
	}
	out := *best
	return &out, true
}

// Held is an entry of a key as Inspect sees it in one tier.
type Held struct {
	// StoredAt is when the body was produced; Age is the inspection's
	// time less StoredAt.
	StoredAt time.Time
	Age      time.Duration
	// FreshFor is how long the entry stays fresh (TTL, or NegativeTTL for
	// a not-found answer, less its age); negative once it is past.
	FreshFor time.Duration
	// State is "fresh", "stale" (within StaleWhileRevalidate: served
	// while one background refresh runs), "stale-if-error" (served only
	// when a fill fails) or "expired".
	State string
	// Purged is what purges applied here did to it: "" (nothing), "soft"
	// (the next Get waits for a fill; this body only if that fails) or
	// "hard" (never served again).
	Purged string
	// Negative, Bytes (the body's) and Tags are the entry's.
	Negative bool
	Bytes    int
	Tags     []Tag
	// Overlay: the first tier holds it in the overlay of just-filled
	// entries that ristretto did not admit.
	Overlay bool
}

// Inspection is what the Store can tell about one key without loading
// it (Inspect).
type Inspection struct {
	// First is the key's entry in this process's memory (ristretto or the
	// overlay); nil: none.
	First *Held
	// Second is its entry in the second tier; nil: none, or no second
	// tier that can be inspected (SecondTier names it; SecondErr is the
	// error reading it).
	Second     *Held
	SecondTier string
	SecondErr  error
	// Next is how the next Get would answer: "hit", "stale" (the body
	// while one background refresh runs), "negative" (a stored not-found
	// answer) or "miss" (a fill: a loader call, or another process's);
	// From is the tier that would answer: "first", the second tier's name,
	// or "backend".
	Next, From string
	// Why says why the next Get is not a first-tier hit ("" when it is).
	Why string
	// Purge is the latest recorded purge that covered the first tier's
	// entry after it was filled or, with no entry held, the latest that
	// covers the key; nil when none is recorded.
	Purge *PurgeRecord
	// Event is the latest first-tier event recorded for the key when the
	// first tier does not hold it; nil when none is recorded.
	Event *KeyEvent
}

// Inspect says where k's entry is, how old, what purges did to it, and how
// the next Get under p would answer and why, without loading anything or
// counting a lookup. The first tier and the records of recent events and
// purges are this process's; the second tier is read when it is an
// InspectableTier.
func (s *Store) Inspect(ctx context.Context, k Key, p Policy) Inspection {
	now := s.now()
	h := s.hash(k)
	g := s.genOf(k)
	var in Inspection
	it, overlay := s.idx.get(h), false
	if it == nil || it.key != k {
		it, overlay = s.ov.peek(h, k), true
	}
	if it != nil {
		in.First = held(it.entry, now, p)
		in.First.Overlay = overlay
		in.First.Purged = s.purgedState(it, g)
		if in.First.Purged != "" {
			in.Purge, _ = s.purges.latest(k, it.entry.Tags, it.gen)
		}
	}
	if t, ok := s.tier.(InspectableTier); ok && !s.closed.Load() {
		in.SecondTier = t.TierName()
		e, gen, err := t.Peek(ctx, k)
		switch {
		case err != nil:
			in.SecondErr = err
		case e != nil:
			in.Second = held(e, now, p)
			switch s.usable(k, gen, e) {
			case markHard:
				in.Second.Purged = "hard"
			case markSoft:
				in.Second.Purged = "soft"
			}
		}
	}
	in.Next, in.From = "miss", "backend"
	if f := in.First; f != nil {
		switch {
		case f.Purged == "hard":
			in.Why = "purged (hard): this body is never served again"
		case f.Purged == "soft":
			in.Why = "purged (soft): the next request waits for a fill, and gets this body only if the fill fails"
		case f.State == "fresh":
			in.Next, in.From = "hit", "first"
			if f.Negative {
				in.Next = "negative"
			}
		case f.State == "stale":
			in.Next, in.From = "stale", "first"
			in.Why = "expired: served stale while one background refresh runs"
		default:
			in.Why = "expired"
		}
	} else {
		if ev, ok := s.events.get(h, k); ok {
			in.Event = &ev
			in.Why = eventWhy[ev.What]
		} else {
			in.Why = fmt.Sprintf("not in this process's memory, and none of its recent drops, evictions or expiries (the last %d keys') is of this key: never filled here, or dropped before that", s.events.size)
		}
		in.Purge, _ = s.purges.latest(k, nil, 0)
	}
	if sec := in.Second; in.From == "backend" && sec != nil && sec.Purged == "" {
		switch sec.State {
		case "fresh":
			in.Next, in.From = "hit", in.SecondTier
			if sec.Negative {
				in.Next = "negative"
			}
		case "stale":
			in.Next, in.From = "stale", in.SecondTier
		}
	}
	return in
}

// eventWhy explains each event kind to an operator.
var eventWhy = map[string]string{
	EventNotAdmitted: "not admitted: the first tier's admission policy refused it (it was kept in the overlay while that had room)",
	EventTooLarge:    "too large: the entry costs more than the first tier's whole budget (cache.max_bytes)",
	EventEvicted:     "evicted to make room for other entries",
	EventExpired:     "expired: its lifetime (ttl plus the longer stale window) ended",
	EventOverlayFull: "pushed out of the overlay (just-filled entries the admission policy refused) by newer ones",
}

// held describes e at time now under p.
func held(e *Entry, now time.Time, p Policy) *Held {
	age := now.Sub(e.StoredAt)
	h := &Held{StoredAt: e.StoredAt, Age: age, Negative: e.Negative, Bytes: len(e.Body), Tags: e.Tags}
	ttl := p.TTL
	if e.Negative {
		ttl = p.NegativeTTL
	}
	h.FreshFor = ttl - age
	switch {
	case age < ttl:
		h.State = "fresh"
	case !e.Negative && age < p.TTL+p.StaleWhileRevalidate:
		h.State = "stale"
	case p.servableOnError(e, age):
		h.State = "stale-if-error"
	default:
		h.State = "expired"
	}
	return h
}

// purgedState says what the purges applied here did to it under k's
// generations g: "", "soft" or "hard" (as lookup judges it).
func (s *Store) purgedState(it *item, g epochs) string {
	if it.gen < g.hard {
		return "hard"
	}
	st := it.state.Load()
	if st>>2 < g.fine {
		st = s.recheck(it)
	}
	switch {
	case st&3 == markHard:
		return "hard"
	case st&3 == markSoft, it.gen < g.fill:
		return "soft"
	}
	return ""
}

// KeyInfo is a key held in the first tier, as Keys lists it.
type KeyInfo struct {
	Key      Key
	StoredAt time.Time
	Negative bool
	// Bytes is the body's size; Tags the number of tags it carries.
	Bytes, Tags int
	// Overlay: held in the overlay (see Held.Overlay).
	Overlay bool
	// Purged is "soft" when a soft purge covered it since its fill (see
	// Held.Purged); hard-purged keys are not listed.
	Purged string
}

// String returns k as "tenant|resource|scope|variant", the form Keys
// takes as its cursor.
func (k Key) String() string {
	return k.Tenant + "|" + k.Resource + "|" + k.Scope + "|" + k.Variant
}

// ErrBadCursor is returned by Keys for an after that is not the String of
// a key of the tenant.
var ErrBadCursor = errors.New("cache: the cursor is not a key of the tenant (the key field of a listed entry)")

// Keys lists the keys of tenant that this process's first tier holds (not
// hard-purged), in the order of their String, starting after the key
// whose String is after ("" for the first page), at most limit; more
// reports whether others follow. It walks every held entry, and keeps
// only tenant's: no key of another tenant is ever listed.
func (s *Store) Keys(tenant, after string, limit int) (keys []KeyInfo, more bool, err error) {
	var cur [3]string // resource, scope, variant
	if after != "" {
		rest, ok := strings.CutPrefix(after, tenant+"|")
		res, rest, ok2 := strings.Cut(rest, "|")
		i := strings.LastIndexByte(rest, '|')
		if !ok || !ok2 || i <= 0 {
			return nil, false, ErrBadCursor
		}
		cur = [3]string{res, rest[:i], rest[i+1:]}
	}
	fields := func(k Key) [3]string { return [3]string{k.Resource, k.Scope, k.Variant} }
	compare := func(a, b [3]string) int {
		return cmp.Or(strings.Compare(a[0], b[0]), strings.Compare(a[1], b[1]), strings.Compare(a[2], b[2]))
	}
	var found []*item
	overlaid := map[*item]bool{}
	s.eachHeld(func(it *item, overlay bool) {
		if it.key.Tenant != tenant || (after != "" && compare(fields(it.key), cur) <= 0) {
			return
		}
		found = append(found, it)
		if overlay {
			overlaid[it] = true
		}
	})
	// Outside the shards' locks: purgedState may recheck an item.
	purged := make(map[*item]string)
	found = slices.DeleteFunc(found, func(it *item) bool {
		st := s.purgedState(it, s.genOf(it.key))
		purged[it] = st
		return st == "hard"
	})
	slices.SortFunc(found, func(a, b *item) int { return compare(fields(a.key), fields(b.key)) })
	found = slices.CompactFunc(found, func(a, b *item) bool { return a.key == b.key })
	if limit <= 0 {
		limit = 1
	}
	more = len(found) > limit
	for _, it := range found[:min(limit, len(found))] {
		e := it.entry
		keys = append(keys, KeyInfo{Key: it.key, StoredAt: e.StoredAt, Negative: e.Negative, Bytes: len(e.Body), Tags: len(e.Tags),
			Overlay: overlaid[it], Purged: purged[it]})
	}
	return keys, more, nil
}

// eachHeld calls fn with every item the first tier holds: those indexed
// (ristretto's) and those in the overlay. It holds one shard's lock (or
// the overlay's) at a time: fn must not call back into the Store's
// index.
func (s *Store) eachHeld(fn func(it *item, overlay bool)) {
	for i := range s.idx.shards {
		sh := &s.idx.shards[i]
		sh.mu.RLock()
		for _, it := range sh.m {
			fn(it, false)
		}
		sh.mu.RUnlock()
	}
	s.ov.each(func(it *item) { fn(it, true) })
}

// Matching counts the entries this process's first tier holds that p
// would purge now and that a lookup could still answer with (not
// hard-purged already): what a purge matched here, for the operator's
// answer. Entries in a second tier and other processes' are not counted.
func (s *Store) Matching(p Purge) int {
	n := 0
	var tagSet map[Tag]bool
	if len(p.Tags) > 8 {
		tagSet = make(map[Tag]bool, len(p.Tags))
		for _, t := range p.Tags {
			tagSet[t] = true
		}
	}
	carries := func(tags []Tag) bool {
		for _, t := range tags {
			if tagSet != nil && tagSet[t] || tagSet == nil && slices.Contains(p.Tags, t) {
				return true
			}
		}
		return false
	}
	var covered []*item
	s.eachHeld(func(it *item, _ bool) {
		k := it.key
		switch {
		case p.All:
		case k.Tenant != p.Tenant:
			return
		case len(p.Tags) > 0:
			if !carries(it.entry.Tags) {
				return
			}
		case p.Resource != "" && k.Resource != p.Resource:
			return
		}
		covered = append(covered, it)
	})
	seen := make(map[Key]bool, len(covered))
	for _, it := range covered { // outside the shards' locks: purgedState may recheck
		if !seen[it.key] && s.purgedState(it, s.genOf(it.key)) != "hard" {
			seen[it.key] = true
			n++
		}
	}
	return n
}
