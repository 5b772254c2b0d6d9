package proxy

import (
	"listingproxy/normalize"
)

// criteriaMemo remembers the canonical criteria of raw query strings that
// parsed cleanly, so a cache hit does not parse the query again. Criteria
// are immutable and depend on the caller only through the tenant's
// result and offset caps, which are part of the key.
//
// It is a CLOCK memo (clockMemo) bounded in entries and in bytes, so a hit
// among many hot keys stays a map lookup: the former memo of 4,096 entries
// emptied itself when full, and with 10,000 keys cycled every hit parsed
// and allocated again (15 allocations and 3.5 KB per hit instead of 1 and
// 22 B; bench/NOTES.md, "Many hot keys").
type criteriaMemo = clockMemo[memoKey, *normalize.Criteria]

type memoKey struct {
	resource normalize.Resource
	max      int // normalize.Options.MaxResults: tenants may differ
	maxOff   int // normalize.Options.MaxOffset: tenants may differ
	raw      string
}

const (
	memoEntries  = 65536
	memoBytes    = 16 << 20 // of the 32 MiB the memory limit leaves beyond the cache (internal/memlimit)
	memoMaxQuery = 2048     // longer queries are parsed every time
	// memoFixed is what one entry costs beyond its strings: the map slot,
	// the ring slot, the entry and the Criteria (measured by
	// TestCriteriaMemoCost).
	memoFixed = 1024
)

func newCriteriaMemo() *criteriaMemo {
	return newClockMemoCost(memoEntries, memoBytes, memoCost)
}

// memoCost estimates the heap an entry holds: the raw query, the canonical
// key, and the criteria's slices, each element of which (8 bytes at most)
// came from at least two bytes of the query ("1,").
func memoCost(k memoKey, c *normalize.Criteria) int {
	if len(k.raw) > memoMaxQuery {
		return memoBytes + 1 // never kept
	}
	return memoFixed + len(k.raw) + len(c.Key()) + 4*len(k.raw)
}
