package cache

import (
	"sync"
	"sync/atomic"
)

// overlay holds just-filled items that ristretto dropped or refused, so that
// the next request is served the value its flight produced. It is a FIFO
// bounded by entries and bytes; its byte budget is reserved out of
// Options.MaxBytes. Lookups reach it only after a ristretto miss, so the hit
// path never takes its lock.
type overlay struct {
	maxBytes   int64
	maxEntries int

	n     atomic.Int64 // len(m), read without the lock to skip empty overlays
	mu    sync.Mutex
	m     map[uint64]*item
	queue []*item // insertion order; may hold items no longer in m
	bytes int64
	// dropped, when set, is told of each item put pushes out (under the
	// overlay's lock).
	dropped func(*item)
}

func newOverlay(maxBytes int64, maxEntries int) *overlay {
	return &overlay{maxBytes: maxBytes, maxEntries: maxEntries, m: make(map[uint64]*item)}
}

// get returns the item stored for h if it is the one for k and no hard
// purge has hidden it (its generation is at least hard).
func (o *overlay) get(h uint64, k Key, hard uint64) *item {
	if o.n.Load() == 0 {
		return nil
	}
	o.mu.Lock()
	it := o.m[h]
	o.mu.Unlock()
	if it == nil || it.key != k || it.gen < hard {
		return nil
	}
	return it
}

// peek returns the item stored for h if it is the one for k, whatever
// purges did to it (Inspect).
func (o *overlay) peek(h uint64, k Key) *item {
	if o.n.Load() == 0 {
		return nil
	}
	o.mu.Lock()
	it := o.m[h]
	o.mu.Unlock()
	if it == nil || it.key != k {
		return nil
	}
	return it
}

// each calls fn with every item held, under the overlay's lock.
func (o *overlay) each(fn func(*item)) {
	if o.n.Load() == 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, it := range o.m {
		fn(it)
	}
}

// put stores it under h, evicting the oldest items to make room. It reports
// false when it can never fit.
func (o *overlay) put(h uint64, it *item) bool {
	if it.cost > o.maxBytes || o.maxEntries <= 0 {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.removeLocked(h)
	for len(o.queue) > 0 && (o.bytes+it.cost > o.maxBytes || len(o.m) >= o.maxEntries) {
		old := o.queue[0]
		o.queue[0] = nil
		o.queue = o.queue[1:]
		if o.m[old.hash] == old {
			o.removeLocked(old.hash)
			if o.dropped != nil {
				o.dropped(old)
			}
		}
	}
	o.m[h] = it
	o.bytes += it.cost
	o.queue = append(o.queue, it)
	if len(o.queue) > 2*o.maxEntries+16 {
		o.compactLocked()
	}
	o.n.Store(int64(len(o.m)))
	return true
}

// del forgets the item under h (its successor is readable in ristretto).
func (o *overlay) del(h uint64) {
	if o.n.Load() == 0 {
		return
	}
	o.mu.Lock()
	o.removeLocked(h)
	o.n.Store(int64(len(o.m)))
	o.mu.Unlock()
}

// purge forgets the items of a tenant (and resource, unless it is "").
// Lookups would refuse them anyway; this frees their budget at once.
func (o *overlay) purge(tenant, resource string, all bool) {
	if o.n.Load() == 0 {
		return
	}
	o.mu.Lock()
	for h, it := range o.m {
		if all || (it.key.Tenant == tenant && (resource == "" || it.key.Resource == resource)) {
			o.removeLocked(h)
		}
	}
	o.compactLocked()
	o.n.Store(int64(len(o.m)))
	o.mu.Unlock()
}

func (o *overlay) removeLocked(h uint64) {
	if it, ok := o.m[h]; ok {
		delete(o.m, h)
		o.bytes -= it.cost
	}
}

// compactLocked drops queue slots whose items have left the map.
func (o *overlay) compactLocked() {
	q := make([]*item, 0, len(o.m))
	for _, it := range o.queue {
		if o.m[it.hash] == it {
			q = append(q, it)
		}
	}
	o.queue = q
}

func (o *overlay) stats() (entries, bytes int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return int64(len(o.m)), o.bytes
}
