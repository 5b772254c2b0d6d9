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
//
// The memo holds each parsedQuery inside its entry (no pointer to follow),
// and a parsedQuery begins with what a hit reads (the canonical key, the
// detail level, the unknown parameters): among many hot keys each of those
// is a cache line not touched since the key's last request, and a hit
// that reads the entry's first line and the criteria's last (where
// Criteria keeps its key) pays two more misses than one that reads the
// first alone (bench/NOTES.md, "One line of the memo per hit").
type criteriaMemo = clockMemo[memoKey, parsedQuery]

// parsedQuery is what the memo keeps of a raw query: its canonical
// criteria, and the parameters it carried that the list does not take
// (counted on every request, refused for a strict tenant). key and detail
// repeat c's, for a hit's first cache line, and vh spares the hit reading
// key's bytes to hash them.
type parsedQuery struct {
	key    string           // c.Key()
	detail normalize.Detail // c.Detail()
	vh     uint64           // key's cache.Store.VariantHash (0 without a cache)
	// labels are the metric labels (normalize.ParamLabel) of unknown,
	// the names (normalize.Unknown); nil when there are none.
	labels, unknown []string
	c               normalize.Criteria
}

// newParsedQuery keeps c and the unknown parameters names.
func newParsedQuery(c normalize.Criteria, names []string) parsedQuery {
	return parsedQuery{key: c.Key(), detail: c.Detail(), labels: paramLabels(names), unknown: names, c: c}
}

// paramLabels returns the metric labels of names; nil for none.
func paramLabels(names []string) []string {
	if names == nil {
		return nil
	}
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = normalize.ParamLabel(n)
	}
	return out
}

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
// came from at least two bytes of the query ("1,"); and the unknown
// parameters' names and labels (a string header each, the names' bytes).
func memoCost(k memoKey, v parsedQuery) int {
	if len(k.raw) > memoMaxQuery {
		return memoBytes + 1 // never kept
	}
	n := memoFixed + len(k.raw) + len(v.c.Key()) + 4*len(k.raw)
	for _, u := range v.unknown {
		n += 2*16 + len(u)
	}
	return n
}
