// Package disktier owns listingproxy's disk tier: entries kept on local
// disk behind cache.SecondTier, and the purges that judge them behind
// cache.Generations, so that a restarted process serves its warm keys at
// once (and stale, within stale_if_error, while its backend is down) and
// never serves a body purged before the restart. It is for a single node
// without cache.shared: a fleet's replicas start warm from Redis, and
// config refuses both (one second tier is consulted per first-tier miss).
//
// It imports cache and modernc.org/sqlite only: never proxy, upstream or
// config (config turns the configuration into Options).
//
// # The store: SQLite (modernc.org/sqlite)
//
// Measured on a shared, loaded 2-core machine (figures, commands and the
// candidates' scratch benchmark: bench/NOTES.md, "Disk tier"):
//
//	                                  SQLite (modernc)         bbolt 1.5
//	write of a 45 KB fill, committed  0.55-0.94 ms             1.6 ms (fsync per commit)
//	read on a first-tier miss         0.24-0.37 ms (checked)   0.04 ms
//	compile time added                0 (already compiled)     ~1 s, and a new module
//	binary size added                 82 KB (this package)     437 KB (bbolt alone)
//
// The write is off the client's path either way (a queue and a writer
// goroutine), and the read is paid once per key per process on a
// first-tier miss, next to a backend call of tens to hundreds of
// milliseconds: bbolt's faster reads buy nothing a client notices, and
// cost a dependency outside the project's list. SQLite was chosen
// because it is already compiled in (upstream/sqlstore's driver: no new
// module, no compile time), its write-ahead log survives kill -9 without
// corruption (TestSurvivesKill9), and its indexes give the eviction order
// and the purge records without buckets kept by hand.
//
// # Layout
//
// One database file (Options.Path, with its -wal and -shm files), in
// WAL mode, locked for this process (flock on Path.lock: a second process
// on the same file would not see this one's purges). Table entries: the
// row id is a SHA-256 of the whole cache.Key (tenant, resource, scope —
// the caller's permission set, country and format — and variant), the
// value the entry's stored form (entry.go: format byte, generation, the
// whole Key again, body, gzip form, ETag, content type, stored-at, tags,
// and a CRC-32C of all of it, as cache/redistier stores one in Redis),
// its size, its expiry (stored-at plus its lifetime) and a use stamp.
// A read checks the checksum and compares the Key: a damaged value is a
// miss (counted, deleted), another key's value is a miss; neither is ever
// served, so tenants and permission levels never share a body. At Open
// the file is checked (PRAGMA quick_check): a damaged file is moved aside
// with its entries and purge records together, and the tier starts empty
// (a cache is not worth refusing to start for); a file that is no SQLite
// database is refused untouched (the path may name someone else's file).
//
// # Writes and the bound
//
// Set queues the entry (bounded by Options.QueueBytes; a full queue drops
// the write, counted) and returns; one writer goroutine takes the whole
// queue and writes it in one transaction, then deletes the expired
// entries and the least recently used (a read stamps its entry's use,
// through the same queue) until the entries are within Options.MaxBytes.
// Entries commit with synchronous=NORMAL: after kill -9 every committed
// write is there (the operating system holds it); after a power loss the
// last ones may be missing, never half-written. Flush waits for the queue
// to be written.
//
// # Purges
//
// Generations are this file's: Purge records the purge (an epoch from a
// counter in the file, the record of its scope — everything, a tenant, a
// tenant's resource — or, for a purge by tags, one record per tenant and
// tag expiring with the purge's Lifetime) in one transaction with
// synchronous=FULL, on the disk before the Store applies it. Watch, called
// once by cache.New, delivers every record, so the restarted Store judges
// the entries it reads from disk by the purges made before: soft-purged
// ones are served only as stale-if-error, hard-purged ones never. Tag
// records are bounded by Options.MaxRecords: past it, those closest to
// expiry are folded into purges of their tenants (more is purged, nothing
// wrongly kept). A purge that cannot be recorded (a full disk, an I/O
// error) would leave on disk bodies it covers: the tier then deletes its
// files and turns itself off until a restart (Stats.Disabled).
package disktier
