// Package cache owns listingproxy's read-through cache of rendered response
// bodies: immutable entries (body, gzip form, ETag), the freshness ladder,
// request coalescing and operator purges. It knows nothing about HTTP,
// backends, breakers or configuration: it must not import upstream, proxy or
// config, only the standard library, ristretto v2, golang.org/x/sync and the
// OpenTelemetry trace API, never its SDK (deps_test.go enforces this). A
// backend's breaker is a decorator of the backend (upstream/breaker); to the
// cache its refusal is one more loader error.
//
// # Read-through
//
// [Store.Get] looks the key up and, on a miss, runs the caller's [Loader]
// inside a singleflight flight, so one loader call per key is in progress at
// a time however many callers wait. The flight re-checks the cache first (a
// flight that just finished may have filled it), runs the loader on a context
// detached from the caller that started it (context.WithoutCancel plus
// Policy.FillTimeout), and recovers a panic into a [*PanicError] that every
// waiter receives. Each waiter selects on its own context: one giving up never
// fails the others, and the load carries on and fills the cache for them.
//
// With Options.TracerProvider set, the flight's leader runs it inside a
// cache.fill span (a child of the leader's request span, so the backend call
// nests under it) and every other Get of the flight records a cache.wait span
// from joining to its answer, linked to the leader's cache.fill span. Hits
// make no span and pay nothing for tracing.
//
// # Hiding ristretto's admission
//
// ristretto buffers Set, may drop it when the buffer is full, and may refuse
// the item at admission (TinyLFU). Callers never see this. The filling flight
// stays visible (new callers join it) until the value is readable: inside the
// flight the Store calls Set, then ristretto's Wait, then Get to confirm that
// its own item was admitted. If it was not (dropped or refused), the item goes
// into a small FIFO overlay of just-filled entries, bounded by count and by
// bytes, that lookups consult after ristretto. The overlay's byte budget is
// carved out of Options.MaxBytes (ristretto gets MaxBytes minus the overlay
// budget), so ristretto plus overlay never hold more than MaxBytes. A
// replacement larger than the entry it replaces deletes the old one first,
// because ristretto applies a bigger cost to an existing key without evicting.
// An entry that ristretto refuses and that is larger than the overlay budget
// is served to the callers of its flight and not kept; an entry larger than
// ristretto's share is never kept (both count as Stats.Rejections).
//
// Lookups do not call ristretto's Get: an index of the items ristretto holds
// (index.go; an item enters when its flight sees ristretto admit it and
// leaves when ristretto lets go of it) answers them, so a hit
// among many hot keys does not read and write ristretto's admission
// structures (several MiB, at random places) on every request. One lookup in
// 16, hit or miss, also goes through ristretto's Get, a uniform sample that
// keeps the admission policy's view of which keys are hot. A caller that
// asks for the same keys again and again may keep a Hint (FreshHashedHint)
// and answer from the item without the index (FreshHint): a Hint leads to
// its item while ristretto holds it and no purge has been published since
// it was taken, and it holds no body (hint.go).
//
// Items are keyed in ristretto by a seeded 64-bit hash of the Key and carry
// the whole Key, which every lookup compares, so a hash collision costs a
// miss, never a wrong body. Items are also given a ristretto TTL equal to
// their useful life (TTL plus the longer stale window, or NegativeTTL plus
// StaleIfError) so
// that dead entries free their bytes; freshness itself is always judged with
// Options.Now.
//
// # Generations and purges
//
// [Store.Purge] never walks the cache. Every purge bumps a store-wide epoch
// and records it against the store, the tenant or the tenant's resource,
// in two generations: the fill generation (the latest purge of either
// [PurgeMode]) and the hard generation (the latest [Hard] purge). A key's
// generations are the larger of its records'. Stored items carry the fill
// generation that was current when their fill started. A lookup accepts
// an item as current only if its generation is still the key's fill
// generation; an item older than that but not older than the key's hard
// generation was soft-purged: Get does not answer with it, it waits for a
// fill as on a miss and serves it as [StaleIfError] only if that fill fails
// (within TTL + StaleIfError of its StoredAt; NegativeTTL + StaleIfError
// for a Negative entry).
// An item older than the hard generation is never served. So a soft purge
// (a change notification: the body is probably outdated) keeps warm keys
// answering while the backend is down, and a hard purge (the body must not
// be shown again) does not.
//
// Flights are keyed by the fill generation, so a request after a purge of
// either mode never joins a flight that started before it, and a pre-purge
// fill is neither stored nor served to later callers (only the callers
// that were already waiting on it, whose requests predate the purge,
// receive its body). The generation tables are copy-on-write behind an
// atomic pointer, so the hit path takes no lock; they grow by one small
// record per purged tenant or resource, and a record that a wider purge
// has overtaken in both generations is dropped.
//
// # Purges by tags
//
// A Loader may list in Entry.Tags what the body holds (the entities it
// renders) and answers for (its URL, for every caller). [Store.PurgeTags]
// purges the entries of a tenant that carry any of the given tags, soft or
// hard, still without walking the cache: it records the purge's epochs per
// tenant and tag (a bounded table, kept for the longest entry lifetime, the
// oldest record past Options.MaxRecords folded into a purge of its whole
// tenant) and raises the tenant's fine epoch. An item carries in one
// atomic word the fine epoch it was last checked at and what purges by
// tags did to it; the hit path compares that word with the tenant's fine
// epoch (read with the tenant's generations, no extra lookup) and checks
// the item's tags against the records only on its first lookup after a
// purge by tags of its tenant. A fill runs at a generation above the
// tenant's fine epoch too, so a request after a purge by tags never joins
// a fill that started before it (its tags are known only when it ends);
// before storing, the fill checks its own tags against the records (and
// Generations.Covering) and is dropped when one was purged meanwhile.
//
// # Second tier and generations
//
// Two seams let a fleet of processes behave as one cache (cache/redistier
// implements both on Redis). A [SecondTier] is consulted only inside a
// flight, after the first-tier re-check: its entry, if still of use, is put
// in the first tier with the generation it was filled at and answers the
// flight by the same freshness ladder (fresh: Hit; within
// StaleWhileRevalidate: Stale plus a refresh; within StaleIfError: served
// only if the fill fails). On a miss the flight Claims the key: another
// process may be filling it, and then this one waits for that value
// instead of calling the backend. A fill writes through with Set. A
// first-tier hit never reaches the second tier. [Generations] supplies
// purge epochs that every process orders the same way and delivers purges
// recorded elsewhere (Watch) into the local tables, which stay the only
// thing the hit path reads; before storing a fill, the flight asks it
// whether a purge covering the key was recorded since the fill started
// (Covering), so a purge racing a fill in another process keeps the fill
// out of both tiers. The defaults (nil Options fields) are this process
// alone: no second tier, epochs from a local counter.
//
// # Freshness ladder
//
// With age = Now() - Entry.StoredAt and a [Policy]:
//
//   - age < TTL: [Hit], the stored body.
//   - age < TTL + StaleWhileRevalidate: [Stale], the stored body, and one
//     background refresh per key (single-flighted with foreground fills).
//   - otherwise the caller waits for a fill; if it fails (loader error, a
//     backend refusing calls, panic, FillTimeout, or the caller's own
//     deadline) and
//     age < TTL + StaleIfError: [StaleIfError], the stored body.
//   - otherwise the error: the proxy answers 503 with Retry-After.
//
// Negative entries (Entry.Negative, "not found") are served as [Negative]
// while age < NegativeTTL. They have no stale-while-revalidate phase: after
// NegativeTTL the caller waits for a fill. But a not-found is an answer like
// any other, so when that fill fails and age < NegativeTTL + StaleIfError
// the stored not-found is served as [StaleIfError] (a backend outage does not
// turn every cached "not found" into a 503).
package cache
