// Package memlimit makes the cache's budget (cache.max_bytes) bound the
// process with the runtime's own knob, the soft memory limit, rather than a
// tuner of ours (docs/performance.md). Serve applies it for as long as it
// runs; an operator's GOMEMLIMIT is left alone, and GOGC is the runtime's
// (its default, 100, or the operator's).
//
// GOGC stays proportional on purpose. Until 2026-11-28 Apply also turned it
// off, so that the collector ran only near the limit; but then every byte a
// hit allocates (about 2.4 KB of net/http's request and header maps) lands
// on memory not touched since the last collection, hundreds of MB earlier,
// and a hit pays those cache misses: with the cache not full, GOGC=100
// served 1.08–1.12 times GOGC=off's 2 KB hits a second in interleaved rounds
// (bench/NOTES.md, "2026-11-28: GOGC back to the runtime's default"). With
// a full cache the limit governs either way.
// Standard library only.
package memlimit

import (
	"log/slog"
	"math"
	"runtime/debug"
)

// headroom is what the memory limit allows beyond the cache's budget
// and half of it again: the rest of the live heap (about 8 MiB on the
// demo), net/http's buffers, fills in flight, the runtime's own
// structures. The limit leaves another 32 MiB of the RSS target
// (1.5 × cache.max_bytes + 64 MiB) to what the runtime does not count: the
// binary's resident code and data (about 22 MiB measured under load).
const headroom = 32 << 20

// Limit is the runtime's soft memory limit for a cache of maxBytes:
// 1.5 × maxBytes + 32 MiB (saturating).
func Limit(maxBytes int64) int64 {
	if maxBytes > (math.MaxInt64-headroom)/3*2 {
		return math.MaxInt64
	}
	return maxBytes + maxBytes/2 + headroom
}

// Apply makes cache.max_bytes bound the process: unless GOMEMLIMIT is set
// (the runtime has then read it, and it is the operator's choice), it sets
// the soft memory limit to Limit(maxBytes). The collector then runs each
// time the heap doubles (GOGC, left to the runtime) or when it nears the
// limit, whichever comes first: a small live heap is collected often and
// cheaply, so the memory a hit allocates is reused while it is still in the
// CPU's caches; a full cache collects near the limit. It returns a function
// that puts back the limit it changed.
func Apply(maxBytes int64, getenv func(string) string, log *slog.Logger) (restore func()) {
	if v := getenv("GOMEMLIMIT"); v != "" {
		log.Debug("GOMEMLIMIT set: memory limit left to it", "GOMEMLIMIT", v)
		return func() {}
	}
	limit := Limit(maxBytes)
	prev := debug.SetMemoryLimit(limit)
	log.Debug("memory limit from cache.max_bytes", "limit_bytes", limit)
	return func() { debug.SetMemoryLimit(prev) }
}
