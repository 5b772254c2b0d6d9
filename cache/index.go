package cache

import (
	"math/rand/v2"
	"sync"
)

// index maps the hash of each item given to ristretto to the item, so that
// a hit finds its entry without ristretto's Get. That Get hands every access
// to ristretto's admission policy (TinyLFU: a Bloom filter and a count-min
// sketch of several MiB, read and written at random places), which among
// many hot keys costs more cache misses than the lookup itself
// (docs/performance.md, "Many hot keys"). The policy still learns which keys
// are hot: one lookup in feedbackEvery, hit or miss alike, also goes through
// ristretto's Get (see Store.lookup), a uniform sample that keeps the keys'
// relative frequencies; ristretto's own access buffers are lossy in the
// same way (a full buffer is dropped).
//
// The index holds an item from the moment store sees ristretto admit it
// until ristretto lets go of it (onExit), both decided under the shard's
// lock by the item's resident state, so it never holds an item ristretto
// refused, evicted or replaced. While ristretto replaces an entry (from its
// Set until store's check) the key is not indexed: a lookup then misses and
// joins the filling flight, which is still open. (Indexing the new item
// before the Set would not do: ristretto may refuse it and keep the old
// one, which the index would then have lost.)
type index struct {
	shards [indexShards]indexShard
}

// indexShards spreads the read locks' counters over several cache lines, so
// that hits on many CPUs do not all write the same one.
const indexShards = 64

// feedbackEvery: one lookup in this many is reported to ristretto's
// admission policy.
const feedbackEvery = 16

type indexShard struct {
	mu sync.RWMutex
	m  map[uint64]*item
	_  [64 - 24 - 8]byte // one cache line each
}

func newIndex() *index {
	x := &index{}
	for i := range x.shards {
		x.shards[i].m = make(map[uint64]*item)
	}
	return x
}

func (x *index) shard(h uint64) *indexShard { return &x.shards[h%indexShards] }

// get returns the item indexed under h, or nil.
func (x *index) get(h uint64) *item {
	sh := x.shard(h)
	sh.mu.RLock()
	it := sh.m[h]
	sh.mu.RUnlock()
	return it
}

// admit indexes it, which store has just seen ristretto admit, unless
// ristretto has already let go of it (exit ran first). It reports whether
// it was the first to see it resident (for Stats.Entries).
func (x *index) admit(it *item) bool {
	sh := x.shard(it.hash)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if !it.resident.CompareAndSwap(0, 1) {
		return false
	}
	sh.m[it.hash] = it
	return true
}

// exit forgets it, which ristretto let go of (evicted, refused, replaced
// or deleted), and reports whether it was resident.
func (x *index) exit(it *item) bool {
	sh := x.shard(it.hash)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.m[it.hash] == it {
		delete(sh.m, it.hash)
	}
	was := it.resident.Swap(2) == 1
	it.unhint() // after the swap: see Store.hintOf
	return was
}

// len counts the indexed items (tests).
func (x *index) len() int {
	n := 0
	for i := range x.shards {
		sh := &x.shards[i]
		sh.mu.RLock()
		n += len(sh.m)
		sh.mu.RUnlock()
	}
	return n
}

// sampled reports whether this lookup is one of those reported to
// ristretto's admission policy.
func sampled() bool { return rand.Uint32()%feedbackEvery == 0 }
