package disktier

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	_ "modernc.org/sqlite" // driver "sqlite"

	"listingproxy/cache"
)

// Defaults for the zero fields of Options (docs/configuration.md lists
// them; TestDocumentedDefaults checks it).
const (
	// DefaultMaxBytes bounds the bytes of the entries kept on disk.
	DefaultMaxBytes = 1 << 30
	// DefaultQueueBytes bounds the entries waiting to be written.
	DefaultQueueBytes = 32 << 20
	// DefaultMaxRecords bounds the records of purges by tags kept on
	// disk, as cache.DefaultMaxRecords bounds the process's own.
	DefaultMaxRecords = cache.DefaultMaxRecords
)

// rowOverhead is what a row costs on disk beside its value (its id, the
// columns, the index entry, a page's slack): part of an entry's size.
const rowOverhead = 128

// Options configures a Tier. Path is required.
type Options struct {
	// Path is the database file; its directory must exist. The files
	// Path-wal, Path-shm and Path.lock sit beside it.
	Path string
	// MaxBytes bounds the bytes of the stored entries (value and a row's
	// overhead); past it the least recently used are deleted. An entry
	// larger than a quarter of it is not written. Default DefaultMaxBytes.
	MaxBytes int64
	// QueueBytes bounds the entries waiting for the writer; a fill that
	// finds the queue full is not written (Stats.Drops). Default
	// DefaultQueueBytes.
	QueueBytes int64
	// MaxRecords bounds the records of purges by tags; past it those
	// closest to expiry are folded into purges of their whole tenants.
	// Default DefaultMaxRecords.
	MaxRecords int
	// Now is the clock of expiries. Default time.Now.
	Now func() time.Time
	// Logger receives write failures and damaged entries. Default: discard.
	Logger *slog.Logger
}

// Stats are the tier's counters.
type Stats struct {
	Hits, Misses uint64
	// Writes are entries written; Drops entries not written because the
	// queue was full; Oversize entries too large to be written.
	Writes, Drops, Oversize uint64
	// Evictions are entries deleted to keep within MaxBytes.
	Evictions uint64
	// Errors are failed reads and write batches.
	Errors uint64
	// Damaged are entries read whose checksum or structure was wrong: a
	// miss each, never served, and deleted.
	Damaged uint64
	// Purges are purges recorded on disk.
	Purges uint64
	// Bytes and Entries are what the database holds (Bytes as counted
	// against MaxBytes); QueuedBytes what waits for the writer.
	Bytes, Entries, QueuedBytes int64
	// Disabled is true once a purge could not be recorded: the tier then
	// deleted its files and serves nothing more (see Purge).
	Disabled bool
}

// Tier is the disk tier: a cache.SecondTier and cache.Generations on one
// SQLite database. Create it with Open, release it with Close.
type Tier struct {
	path       string
	db         *sql.DB // reads and the writer: synchronous=NORMAL
	pdb        *sql.DB // purges: synchronous=FULL, one connection
	lock       *os.File
	maxBytes   int64
	queueBytes int64
	maxRecords int
	now        func() time.Time
	log        *slog.Logger

	mu      sync.Mutex
	cond    *sync.Cond // signals a change of queue, busy or closed
	queue   []op
	queued  int64 // bytes in queue
	busy    bool  // the writer holds a batch
	closed  bool
	wakeup  chan struct{}
	stopped chan struct{}

	seq       atomic.Int64 // the last use stamp given (written column)
	disabled  atomic.Bool
	undeleted atomic.Bool // disabled, and a file could not be deleted

	hits, misses, writes, drops, oversize, evictions, errs, damaged, purges atomic.Uint64
	bytes, entries                                                          atomic.Int64
}

// op is a write for the writer: an entry to store (e set), a use to
// stamp (touch) or a row to delete (neither).
type op struct {
	id      []byte
	k       cache.Key
	gen     uint64
	e       *cache.Entry
	expires time.Time
	touch   bool
	size    int64 // bytes held in the queue
}

// sqliteCorrupt is SQLite's primary result code SQLITE_CORRUPT.
const sqliteCorrupt = 11

// busyTimeout is how long a statement waits for another connection's
// write lock (the writer's, a purge's) before it fails.
var busyTimeout = 10 * time.Second

// dsn is the database's data source name with the pragmas every
// connection of one pool runs.
func dsn(path, sync string) string {
	q := url.Values{}
	for _, p := range []string{"journal_mode(WAL)", "synchronous(" + sync + ")", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()),
		"journal_size_limit(67108864)", "mmap_size(268435456)", "foreign_keys(0)"} {
		q.Add("_pragma", p)
	}
	// Every transaction writes: take the write lock when it begins, so a
	// busy database is waited for (busy_timeout) rather than refused on
	// the upgrade from a read.
	q.Set("_txlock", "immediate")
	return "file:" + path + "?" + q.Encode()
}

const schema = `
CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS entries(id BLOB PRIMARY KEY, size INTEGER NOT NULL, expires INTEGER NOT NULL,
	used INTEGER NOT NULL, value BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS entries_used ON entries(used);
CREATE INDEX IF NOT EXISTS entries_expires ON entries(expires);
CREATE TABLE IF NOT EXISTS scopes(kind TEXT NOT NULL, tenant TEXT NOT NULL, resource TEXT NOT NULL,
	fill INTEGER NOT NULL, hard INTEGER NOT NULL, PRIMARY KEY(kind, tenant, resource));
CREATE TABLE IF NOT EXISTS tags(tenant TEXT NOT NULL, tag INTEGER NOT NULL, fill INTEGER NOT NULL,
	hard INTEGER NOT NULL, expires INTEGER NOT NULL, PRIMARY KEY(tenant, tag));
CREATE INDEX IF NOT EXISTS tags_expires ON tags(expires);
`

// Open opens (or creates) the database at o.Path and starts its writer.
// A database another process has open is an error: two processes would
// not see each other's purges.
func Open(o Options) (_ *Tier, err error) {
	if o.Path == "" {
		return nil, errors.New("disktier: no path")
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.QueueBytes <= 0 {
		o.QueueBytes = DefaultQueueBytes
	}
	if o.MaxRecords <= 0 {
		o.MaxRecords = DefaultMaxRecords
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	t := &Tier{path: o.Path, maxBytes: o.MaxBytes, queueBytes: o.QueueBytes, maxRecords: o.MaxRecords,
		now: o.Now, log: o.Logger, wakeup: make(chan struct{}, 1), stopped: make(chan struct{})}
	t.cond = sync.NewCond(&t.mu)
	t.lock, err = os.OpenFile(o.Path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("disktier: %w", err)
	}
	if err := syscall.Flock(int(t.lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = t.lock.Close()
		return nil, fmt.Errorf("disktier: %s is in use by another process (%w)", o.Path, err)
	}
	defer func() {
		if err != nil {
			t.closeFiles()
		}
	}()
	damaged, err := t.openDB()
	if err != nil {
		return nil, err
	}
	if damaged != "" {
		// A cache is not worth refusing to start for: the damaged file
		// goes aside, with its entries and purge records (nothing it
		// held can be served again), and the tier starts empty.
		t.closeDBs()
		aside := fmt.Sprintf("%s.damaged-%d", o.Path, time.Now().Unix())
		for _, suffix := range []string{"", "-wal", "-shm"} {
			if err := os.Rename(o.Path+suffix, aside+suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("disktier: %s fails its integrity check (%s) and cannot be moved aside: %w", o.Path, damaged, err)
			}
		}
		t.log.Error("disktier: the database failed its integrity check: moved aside, starting empty", "path", o.Path, "moved_to", aside, "check", damaged)
		if damaged, err = t.openDB(); err != nil {
			return nil, err
		} else if damaged != "" {
			return nil, fmt.Errorf("disktier: %s: a new database fails its integrity check: %s", o.Path, damaged)
		}
	}
	var bytes, n, used int64
	if err := t.db.QueryRow(`SELECT COALESCE(SUM(size), 0), COUNT(*), COALESCE(MAX(used), 0) FROM entries`).Scan(&bytes, &n, &used); err != nil {
		return nil, fmt.Errorf("disktier: %s: %w", o.Path, err)
	}
	t.bytes.Store(bytes)
	t.entries.Store(n)
	t.seq.Store(used)
	if bytes > t.maxBytes { // a smaller bound than the last run's
		if err := t.writeBatch(nil); err != nil {
			return nil, fmt.Errorf("disktier: %s: %w", o.Path, err)
		}
	}
	go t.write()
	t.kick()
	return t, nil
}

// openDB opens the database's two pools and its tables, and checks it
// (PRAGMA quick_check): damaged is what the check found wrong, "" when
// nothing. A file that is not a SQLite database is an error: the path may
// name someone else's file.
func (t *Tier) openDB() (damaged string, err error) {
	if t.db, err = sql.Open("sqlite", dsn(t.path, "NORMAL")); err != nil {
		return "", fmt.Errorf("disktier: %w", err)
	}
	t.db.SetMaxOpenConns(4)
	t.db.SetMaxIdleConns(4)
	if t.pdb, err = sql.Open("sqlite", dsn(t.path, "FULL")); err != nil {
		return "", fmt.Errorf("disktier: %w", err)
	}
	t.pdb.SetMaxOpenConns(1)
	var check string
	if err := t.pdb.QueryRow(`PRAGMA quick_check(1)`).Scan(&check); err != nil {
		// SQLITE_CORRUPT: damaged beyond what the check reports as rows.
		var coded interface{ Code() int }
		if errors.As(err, &coded) && coded.Code()&0xff == sqliteCorrupt {
			return err.Error(), nil
		}
		return "", fmt.Errorf("disktier: %s: %w", t.path, err)
	}
	if check != "ok" {
		return check, nil
	}
	if _, err := t.pdb.Exec(schema); err != nil {
		return "", fmt.Errorf("disktier: %s: %w", t.path, err)
	}
	return "", nil
}

func (t *Tier) closeDBs() {
	if t.db != nil {
		_ = t.db.Close()
	}
	if t.pdb != nil {
		_ = t.pdb.Close()
	}
	t.db, t.pdb = nil, nil
}

func (t *Tier) closeFiles() {
	t.closeDBs()
	_ = t.lock.Close() // releases the lock
}

// Close writes what is queued, then closes the database.
func (t *Tier) Close() {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.closed = true
	t.mu.Unlock()
	t.kick()
	<-t.stopped
	t.closeFiles()
}

// Flush waits until every write queued before it has been made (or
// dropped by a failure). For tests and shutdown.
func (t *Tier) Flush() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for (len(t.queue) > 0 || t.busy) && !t.closed {
		t.cond.Wait()
	}
}

// Stats returns the tier's counters.
func (t *Tier) Stats() Stats {
	t.mu.Lock()
	q := t.queued
	t.mu.Unlock()
	return Stats{
		Hits: t.hits.Load(), Misses: t.misses.Load(), Writes: t.writes.Load(), Drops: t.drops.Load(),
		Oversize: t.oversize.Load(), Evictions: t.evictions.Load(), Errors: t.errs.Load(), Damaged: t.damaged.Load(),
		Purges: t.purges.Load(), Bytes: t.bytes.Load(), Entries: t.entries.Load(), QueuedBytes: q,
		Disabled: t.disabled.Load(),
	}
}

// Get implements cache.SecondTier: one indexed read of k's row, its value
// checked (checksum, key) before anything of it is used. An expired,
// foreign or damaged value is a miss; a damaged one is deleted.
func (t *Tier) Get(ctx context.Context, k cache.Key) (*cache.Entry, uint64, error) {
	if t.disabled.Load() {
		return nil, 0, nil
	}
	id := keyID(k)
	var v []byte
	var expires int64
	err := t.db.QueryRowContext(ctx, `SELECT value, expires FROM entries WHERE id = ?`, id).Scan(&v, &expires)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		t.misses.Add(1)
		return nil, 0, nil
	case err != nil:
		t.errs.Add(1)
		t.misses.Add(1)
		return nil, 0, fmt.Errorf("disktier: %w", err)
	}
	if t.now().UnixNano() >= expires {
		t.misses.Add(1)
		return nil, 0, nil
	}
	e, gen, err := decode(v, k)
	if err != nil {
		t.damaged.Add(1)
		t.misses.Add(1)
		t.log.Warn("disktier: damaged entry: a miss, deleted", "tenant", k.Tenant, "resource", k.Resource, "err", err)
		t.enqueue(op{id: id}, false)
		return nil, 0, nil
	}
	if e == nil {
		t.misses.Add(1)
		return nil, 0, nil
	}
	t.hits.Add(1)
	t.enqueue(op{id: id, touch: true}, true)
	return e, gen, nil
}

// TierName implements cache.InspectableTier.
func (t *Tier) TierName() string { return "disk" }

// Peek implements cache.InspectableTier: k's entry as Get reads it,
// counted in no statistic and without touching its recency (a damaged
// value is reported, not deleted).
func (t *Tier) Peek(ctx context.Context, k cache.Key) (*cache.Entry, uint64, error) {
	if t.disabled.Load() {
		return nil, 0, nil
	}
	var v []byte
	var expires int64
	err := t.db.QueryRowContext(ctx, `SELECT value, expires FROM entries WHERE id = ?`, keyID(k)).Scan(&v, &expires)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, 0, nil
	case err != nil:
		return nil, 0, fmt.Errorf("disktier: %w", err)
	case t.now().UnixNano() >= expires:
		return nil, 0, nil
	}
	return decode(v, k)
}

// Claim implements cache.SecondTier: one process, nothing to coordinate.
func (t *Tier) Claim(context.Context, cache.Key) (*cache.Entry, uint64, error) { return nil, 0, nil }

// Abandon implements cache.SecondTier: nothing was claimed.
func (t *Tier) Abandon(context.Context, cache.Key, error) {}

// Set implements cache.SecondTier: the entry is queued for the writer and
// Set returns at once; a full queue drops it (Stats.Drops).
func (t *Tier) Set(_ context.Context, k cache.Key, gen uint64, e *cache.Entry, ttl time.Duration) {
	if t.disabled.Load() {
		return
	}
	size := int64(len(e.Body)+len(e.Gzip)+len(e.ETag)+len(e.ContentType)+8*len(e.Tags)) + rowOverhead
	if size > t.maxBytes/4 {
		t.oversize.Add(1)
		return
	}
	t.enqueue(op{id: keyID(k), k: k, gen: gen, e: e, expires: t.now().Add(ttl), size: size}, true)
}

// enqueue queues o for the writer; when it does not fit in QueueBytes it
// is dropped (counted when drop). A delete is never dropped.
func (t *Tier) enqueue(o op, drop bool) {
	if o.size == 0 {
		o.size = int64(len(o.id)) + 64
	}
	t.mu.Lock()
	if t.closed || (drop && t.queued+o.size > t.queueBytes) {
		t.mu.Unlock()
		if o.e != nil {
			t.drops.Add(1)
		}
		return
	}
	t.queue = append(t.queue, o)
	t.queued += o.size
	t.mu.Unlock()
	t.kick()
}

func (t *Tier) kick() {
	select {
	case t.wakeup <- struct{}{}:
	default:
	}
}

// write is the writer: it takes the whole queue and writes it in one
// transaction, then deletes the least recently used entries past
// MaxBytes, until Close.
func (t *Tier) write() {
	defer close(t.stopped)
	for {
		<-t.wakeup
		for {
			t.mu.Lock()
			batch, closed := t.queue, t.closed
			t.queue, t.queued = nil, 0
			t.busy = len(batch) > 0
			t.cond.Broadcast()
			t.mu.Unlock()
			if len(batch) == 0 {
				if closed {
					return
				}
				break
			}
			if !t.disabled.Load() {
				if err := t.writeBatch(batch); err != nil {
					t.errs.Add(1)
					t.log.Warn("disktier: writing entries failed; they stay in memory only", "entries", len(batch), "err", err)
				}
			}
			t.mu.Lock()
			t.busy = false
			t.cond.Broadcast()
			t.mu.Unlock()
		}
	}
}

// writeBatch writes batch and keeps the entries within MaxBytes, in one
// transaction.
func (t *Tier) writeBatch(batch []op) error {
	ctx := context.Background()
	tx, err := t.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	var dBytes, dEntries int64
	var writes, evictions uint64
	oldSize := func(id []byte) (int64, bool, error) {
		var n int64
		err := tx.QueryRowContext(ctx, `SELECT size FROM entries WHERE id = ?`, id).Scan(&n)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, false, nil
		}
		return n, err == nil, err
	}
	for _, o := range batch {
		switch {
		case o.touch:
			if _, err := tx.ExecContext(ctx, `UPDATE entries SET used = ? WHERE id = ?`, t.seq.Add(1), o.id); err != nil {
				return err
			}
		case o.e == nil:
			n, found, err := oldSize(o.id)
			if err != nil {
				return err
			}
			if found {
				if _, err := tx.ExecContext(ctx, `DELETE FROM entries WHERE id = ?`, o.id); err != nil {
					return err
				}
				dBytes -= n
				dEntries--
			}
		default:
			v := encode(o.k, o.gen, o.e)
			size := int64(len(v)) + rowOverhead
			n, found, err := oldSize(o.id)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO entries(id, size, expires, used, value) VALUES(?, ?, ?, ?, ?)
				ON CONFLICT(id) DO UPDATE SET size = excluded.size, expires = excluded.expires, used = excluded.used, value = excluded.value`,
				o.id, size, o.expires.UnixNano(), t.seq.Add(1), v); err != nil {
				return err
			}
			if found {
				dBytes -= n
			} else {
				dEntries++
			}
			dBytes += size
			writes++
		}
	}
	// Within MaxBytes: the expired first, then the least recently used
	// (both through an index: the values are not read).
	if t.bytes.Load()+dBytes > t.maxBytes {
		rows, err := tx.QueryContext(ctx, `DELETE FROM entries WHERE expires <= ? RETURNING size`, t.now().UnixNano())
		if err != nil {
			return err
		}
		for rows.Next() {
			var n int64
			if err := rows.Scan(&n); err != nil {
				rows.Close()
				return err
			}
			dBytes -= n
			dEntries--
			evictions++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	for over := t.bytes.Load() + dBytes - t.maxBytes; over > 0; over = t.bytes.Load() + dBytes - t.maxBytes {
		rows, err := tx.QueryContext(ctx, `SELECT id, size FROM entries ORDER BY used LIMIT 64`)
		if err != nil {
			return err
		}
		var ids [][]byte
		for over > 0 && rows.Next() {
			var id []byte
			var n int64
			if err := rows.Scan(&id, &n); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
			over -= n
			dBytes -= n
			dEntries--
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(ids) == 0 {
			break // nothing left: the count was off
		}
		for _, id := range ids {
			if _, err := tx.ExecContext(ctx, `DELETE FROM entries WHERE id = ?`, id); err != nil {
				return err
			}
		}
		evictions += uint64(len(ids))
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	t.bytes.Add(dBytes)
	t.entries.Add(dEntries)
	t.writes.Add(writes)
	t.evictions.Add(evictions)
	return nil
}
