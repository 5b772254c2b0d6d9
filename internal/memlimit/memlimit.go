// Package memlimit makes the cache's budget (cache.max_bytes) bound the
// process with the runtime's own knobs, the soft memory limit and GOGC,
// rather than a tuner of ours (docs/performance.md). Serve applies it for
// as long as it runs; an operator's GOMEMLIMIT or GOGC is left alone.
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

// Apply makes cache.max_bytes bound the process with the runtime's
// own knobs rather than a tuner of ours. Unless GOMEMLIMIT is set, it sets
// the soft memory limit to Limit(maxBytes); unless GOGC is set, it
// turns proportional collection off (GOGC=off), so the collector runs when
// the heap nears the limit, not each time it doubles. Together they give a
// small live heap the whole budget as headroom (a busy proxy with a small
// cache collects a few times a minute instead of dozens of times a second)
// and a full cache the remaining half of max_bytes plus 32 MiB. Either
// variable, when set, is the operator's choice and is left alone: the
// runtime has already read it (and with no limit at all, GOMEMLIMIT=off,
// GOGC stays at its default). It returns a function that puts back the
// settings it changed.
func Apply(maxBytes int64, getenv func(string) string, log *slog.Logger) (restore func()) {
	var undo []func()
	if v := getenv("GOMEMLIMIT"); v != "" {
		log.Debug("GOMEMLIMIT set: memory limit left to it", "GOMEMLIMIT", v)
	} else {
		limit := Limit(maxBytes)
		prev := debug.SetMemoryLimit(limit)
		undo = append(undo, func() { debug.SetMemoryLimit(prev) })
		log.Debug("memory limit from cache.max_bytes", "limit_bytes", limit)
	}
	switch v := getenv("GOGC"); {
	case v != "":
		log.Debug("GOGC set: left to it", "GOGC", v)
	case debug.SetMemoryLimit(-1) == math.MaxInt64:
		// GOMEMLIMIT=off: without a limit, GOGC=off would never collect.
	default:
		prev := debug.SetGCPercent(-1)
		undo = append(undo, func() { debug.SetGCPercent(prev) })
	}
	return func() {
		for _, f := range undo {
			f()
		}
	}
}
