package main

import (
	"context"
	"log/slog"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// gcHeadroom is the least the heap may grow between two garbage
// collections. Go's own floor is 4 MiB (at GOGC=100), sized for small
// programs: listingproxy's live heap is small until the cache fills, and
// net/http allocates a few KiB per request, so with the floor a busy
// proxy collects dozens of times a second (about 2-4% of a cache hit's CPU
// here). 64 MiB of headroom is a small part of any cache budget
// (cache.max_bytes, 256 MiB by default).
const gcHeadroom = 64 << 20

// tuneGC keeps the garbage collector's heap goal at least headroom above
// the live heap: every tick it sets GOGC to max(100, headroom/live*100),
// capped at 10000. Once the live heap exceeds headroom, GOGC is 100, Go's
// default; the extra memory is never more than headroom. An explicit GOGC
// in the environment is the operator's choice and turns this off.
func tuneGC(ctx context.Context, headroom uint64, every time.Duration, getenv func(string) string, log *slog.Logger) {
	if getenv("GOGC") != "" {
		log.Debug("GOGC set: garbage collector tuning off", "GOGC", getenv("GOGC"))
		return
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	current := -1
	defer func() { debug.SetGCPercent(100) }()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		metrics.Read(sample)
		var live uint64
		if sample[0].Value.Kind() == metrics.KindUint64 {
			live = sample[0].Value.Uint64()
		}
		if pct := gcPercent(live, headroom); pct != current {
			debug.SetGCPercent(pct)
			current = pct
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// gcPercent is the GOGC that puts the heap goal headroom above a live heap
// of live bytes (live*(1+GOGC/100)), at least Go's default of 100 and at
// most 10000. It is rounded down to a multiple of 100 so that small changes
// of the live heap do not reset it every tick.
func gcPercent(live, headroom uint64) int {
	live = max(live, 1<<20) // no live heap measured yet (before the first cycle)
	pct := headroom * 100 / live
	pct = pct / 100 * 100
	return int(min(max(pct, 100), 10000))
}
