// Package redistier owns listingproxy's shared second cache tier on Redis
// (or Valkey): it implements cache.SecondTier and cache.Generations with
// one go-redis UniversalClient (standalone, Sentinel or Cluster), so that
// the replicas of a fleet share stored entries, fill each key once for the
// whole fleet, and see each other's purges.
//
// It imports cache, go-redis and gobreaker only: never proxy, upstream or
// config (config turns the configuration into Options and ClientOptions).
//
// # Keys
//
// Every key and channel starts with Options.KeyPrefix. An entry lives at
// PREFIX e:{ID}, where ID is a SHA-256 of the whole cache.Key (tenant,
// resource, scope — the caller's permission set, country and format — and
// variant), and the stored value repeats the whole Key, which Get compares:
// two keys never share an entry, a hash collision costs a miss. The value
// carries what a hit needs: body, gzip form, ETag, content type, stored-at,
// the negative flag and the generation the fill started at, and ends with
// a CRC-32C of the rest, checked on every read: a damaged value is a miss,
// never served (entry.go says why one checksum of the whole value). Values
// larger than Options.MaxEntryBytes are neither written (they stay in the
// first tier of the process that filled them) nor read past the bound
// (GETRANGE), and one found is deleted. Redis expires an entry at the end of its useful life (TTL
// plus the longer stale window).
//
// # One fill per key for the fleet
//
// On a second-tier miss, Claim takes the key's lease (PREFIX l:{ID}, SET NX
// PX Options.Lease). The holder loads; Set writes the entry, drops the
// lease and publishes on PREFIX filled, in one transaction. A replica that finds
// the lease taken registers for that notification (one subscription per
// process, dispatched to waiting flights by ID) and waits, within its own
// fill deadline, for the value, for the filler's failure (then it fails
// too and may serve its stale copy), or for the lease to expire (a filler
// that died releases nothing): then it tries to take the lease itself.
//
// # Purges
//
// Generations are one Redis hash (PREFIX {gens}) with a record per scope
// (all, a tenant, a tenant's resource) of the epochs of its latest purge
// and latest hard purge, and a counter (PREFIX {gens}:epoch) that orders
// purges for the whole fleet. Purge updates both and publishes the purge
// on PREFIX purge in one script; every process applies what it receives
// to its local tables, so first-tier entries of every replica are hidden
// at once. Purges by tags (an entity, one URL) are recorded per tenant and
// tag in a second hash (PREFIX {gens}:tags), each record expiring with the
// purge's Lifetime through a sorted set of deadlines (PREFIX
// {gens}:tags:exp) that every later purge by tags prunes; entries carry
// their tags, so a replica judges an entry it reads from Redis by the same
// records. The tags hash is bounded by Options.MaxRecords: past it, the
// records closest to expiry are folded into purges of their tenants.
// Covering reads both hashes in one round trip. On each (re)subscription
// both hashes are read again, page by page (HSCAN), so a process that was
// cut off, or is new, catches up however many records there are; until it
// has, Get answers misses (Synced), since an entry in Redis may be one a
// purge it has not read covers.
//
// # Failure
//
// A caller waits for a Redis operation at most Options.Timeout; the
// operation runs on, detached, to its own deadline (four times the
// timeout, at least a second), and goes through a breaker of its own
// (gobreaker) that counts only what Redis did, not how late a loaded
// process read the answer (see call). When Redis is slow or down the tier
// answers "miss" and "load yourself", and the process goes on as a lone
// cache with local coalescing. A purge Redis cannot record now is applied
// locally and kept pending: the tier records it as soon as Redis answers
// (Purge, retryPurges). The subscription reconnects with a backoff; the
// breaker closes after successful probes.
package redistier
