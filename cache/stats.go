package cache

import "sync/atomic"

type counters struct {
	outcomes                                 [len(outcomeNames)]atomic.Uint64
	errors, loaderCalls, refreshes, panics   atomic.Uint64
	joins, getFlights                        atomic.Uint64 // Waiters = joins - getFlights
	evictions, rejects, overlayPuts, entries atomic.Uint64
	purges                                   [2]atomic.Uint64 // per PurgeMode
	purgedFills                              atomic.Uint64
	purgesReceived, tierHits, peerFills      atomic.Uint64
	refreshesAhead, refreshesSkipped         atomic.Uint64
}

// Stats is a snapshot of plain counters since New.
type Stats struct {
	// Per Outcome, counted once per Get.
	Hits, Stale, StaleIfError, Misses, Negative, Bypass uint64
	// Errors counts Gets that returned an error.
	Errors uint64
	// LoaderCalls counts loader invocations (foreground, background, bypass).
	LoaderCalls uint64
	// Waiters counts Gets that joined a flight another caller started
	// (coalesced). It may briefly run ahead while a flight is starting.
	Waiters uint64
	// Refreshes counts background refreshes started (of stale entries
	// and ahead of expiry).
	Refreshes uint64
	// RefreshesAhead counts refreshes started before a hot entry expired
	// (Policy.RefreshAhead); RefreshesSkipped those skipped because
	// Options.RefreshBudget said no.
	RefreshesAhead, RefreshesSkipped uint64
	// Panics counts loader panics.
	Panics uint64
	// Bytes is the cost held now (ristretto plus overlay); never above
	// MaxBytes. Entries is the entry count held in ristretto, and
	// OverlayEntries the count in the overlay.
	Bytes, MaxBytes, Entries, OverlayEntries int64
	// Evictions counts entries ristretto evicted (for room or expiry);
	// Rejections counts entries it refused at admission or that were too
	// large; OverlayPuts counts entries kept readable by the overlay.
	Evictions, Rejections, OverlayPuts uint64
	// SoftPurges and HardPurges count Purge and PurgeAll calls by mode;
	// PurgedFills counts fills whose result was not stored because a purge
	// (of either mode) happened during them.
	SoftPurges, HardPurges, PurgedFills uint64
	// PurgesReceived counts purges Generations delivered (other
	// processes', and this one's own echoed back).
	PurgesReceived uint64
	// SecondTierHits counts flights answered from the SecondTier's stored
	// entry without a loader call; PeerFills those answered with the
	// entry another process filled while this one waited (Claim).
	SecondTierHits, PeerFills uint64
}

// Stats returns the current counters.
func (s *Store) Stats() Stats {
	st := Stats{
		Hits:         s.st.outcomes[Hit].Load(),
		Stale:        s.st.outcomes[Stale].Load(),
		StaleIfError: s.st.outcomes[StaleIfError].Load(),
		Misses:       s.st.outcomes[Miss].Load(),
		Negative:     s.st.outcomes[Negative].Load(),
		Bypass:       s.st.outcomes[Bypass].Load(),
		Errors:       s.st.errors.Load(),
		LoaderCalls:  s.st.loaderCalls.Load(),
		Refreshes:    s.st.refreshes.Load(),

		RefreshesAhead:   s.st.refreshesAhead.Load(),
		RefreshesSkipped: s.st.refreshesSkipped.Load(),
		Panics:           s.st.panics.Load(),
		MaxBytes:         s.maxBytes,
		Entries:          int64(s.st.entries.Load()),
		Evictions:        s.st.evictions.Load(),
		Rejections:       s.st.rejects.Load(),
		OverlayPuts:      s.st.overlayPuts.Load(),
		SoftPurges:       s.st.purges[Soft].Load(),
		HardPurges:       s.st.purges[Hard].Load(),
		PurgedFills:      s.st.purgedFills.Load(),

		PurgesReceived: s.st.purgesReceived.Load(),
		SecondTierHits: s.st.tierHits.Load(),
		PeerFills:      s.st.peerFills.Load(),
	}
	if j, f := s.st.joins.Load(), s.st.getFlights.Load(); j > f {
		st.Waiters = j - f
	}
	ovEntries, ovBytes := s.ov.stats()
	st.OverlayEntries = ovEntries
	st.Bytes = ovBytes
	if !s.closed.Load() {
		st.Bytes += s.maxCost - s.c.RemainingCost()
	}
	return st
}
