package disktier_test

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"listingproxy/cache"
	"listingproxy/cache/disktier"
	"listingproxy/internal/testkit"
)

var pol = cache.Policy{
	TTL:                  time.Minute,
	StaleWhileRevalidate: 5 * time.Minute,
	StaleIfError:         time.Hour,
	NegativeTTL:          10 * time.Second,
}

var errBackend = errors.New("backend down")

var t0 = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

// node is one process's cache: a Store over a disk Tier.
type node struct {
	store *cache.Store
	tier  *disktier.Tier
}

// start opens the tier at path and a Store over it, both closed at the end
// of the test (or by stop).
func start(t *testing.T, path string, clock *testkit.Clock, o disktier.Options) *node {
	t.Helper()
	o.Path, o.Now = path, clock.Now
	tier, err := disktier.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	store, err := cache.New(cache.Options{MaxBytes: 64 << 20, Now: clock.Now, SecondTier: tier, Generations: tier})
	if err != nil {
		tier.Close()
		t.Fatal(err)
	}
	n := &node{store, tier}
	t.Cleanup(n.stop)
	return n
}

// stop ends the process cleanly: the Store, then the tier (its queue
// written).
func (n *node) stop() {
	n.store.Close()
	n.tier.Close()
}

// restart stops n and starts another process on the same file.
func restart(t *testing.T, n *node, path string, clock *testkit.Clock, o disktier.Options) *node {
	t.Helper()
	n.tier.Flush()
	n.stop()
	return start(t, path, clock, o)
}

// loader counts its calls and answers body (or err).
type loader struct {
	calls atomic.Int64
	err   error
}

func (l *loader) of(body string, tags ...cache.Tag) cache.Loader {
	return func(context.Context) (*cache.Entry, error) {
		l.calls.Add(1)
		if l.err != nil {
			return nil, l.err
		}
		e := cache.NewEntry([]byte(body), "application/json", false, time.Time{})
		e.Tags = tags
		return e, nil
	}
}

func keyOf(tenant, resource, scope string) cache.Key {
	return cache.Key{Tenant: tenant, Resource: resource, Scope: scope, Variant: "limit=2"}
}

// listing is a 45 KB JSON body, large enough for a gzip form.
func listing(seed string) string {
	var b strings.Builder
	for i := 0; b.Len() < 45_000; i++ {
		fmt.Fprintf(&b, `{"id":%d,"address":"%d %s Street","price":%d},`, i, i, seed, 500_000+i*1_000)
	}
	return b.String()
}

// get asks n for k with a loader answering body (or failing with err).
func get(t *testing.T, n *node, k cache.Key, l *loader, body string) (string, cache.Outcome, error) {
	t.Helper()
	e, o, err := n.store.Get(context.Background(), k, pol, l.of(body))
	if err != nil {
		return "", o, err
	}
	return string(e.Body), o, nil
}

// TestRestartServesWarmKeys: a restarted process answers every key it had
// filled from disk without a loader call (fresh: a hit with the same body
// and gzip form), within stale_if_error serves them stale when the loader
// fails, and past it reports the failure.
func TestRestartServesWarmKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	clock := testkit.NewClock(t0)
	n := start(t, path, clock, disktier.Options{})
	keys := []cache.Key{keyOf("harbour", "au/properties", "full|au|json"), keyOf("harbour", "au/agents", "full|au|json"), keyOf("summit", "au/properties", "full|au|json")}
	var l loader
	want := map[cache.Key]*cache.Entry{}
	for i, k := range keys {
		e, _, err := n.store.Get(context.Background(), k, pol, l.of(listing(strconv.Itoa(i))))
		if err != nil {
			t.Fatal(err)
		}
		want[k] = e
	}
	n = restart(t, n, path, clock, disktier.Options{})
	l.calls.Store(0)
	for _, k := range keys {
		e, o, err := n.store.Get(context.Background(), k, pol, l.of("new"))
		if err != nil || o != cache.Hit {
			t.Fatalf("%v after the restart: %v, %v; want a hit", k, o, err)
		}
		w := want[k]
		if string(e.Body) != string(w.Body) || string(e.Gzip) != string(w.Gzip) || e.ETag != w.ETag || !e.StoredAt.Equal(w.StoredAt) {
			t.Errorf("%v after the restart: not the stored entry", k)
		}
	}
	if c := l.calls.Load(); c != 0 {
		t.Errorf("%d loader calls after the restart; want 0", c)
	}
	if s := n.tier.Stats(); s.Hits != uint64(len(keys)) {
		t.Errorf("tier hits %d, want %d", s.Hits, len(keys))
	}

	// Past ttl, the backend down, after another restart: stale-if-error.
	clock.Advance(pol.TTL + pol.StaleWhileRevalidate + time.Second)
	n = restart(t, n, path, clock, disktier.Options{})
	down := &loader{err: errBackend}
	for i, k := range keys {
		body, o, err := get(t, n, k, down, "")
		if err != nil || o != cache.StaleIfError || body != listing(strconv.Itoa(i)) {
			t.Errorf("%v, backend down, within stale_if_error: %v, %v; want its stored body, stale-if-error", k, o, err)
		}
	}
	clock.Advance(pol.StaleIfError)
	n = restart(t, n, path, clock, disktier.Options{})
	if _, o, err := get(t, n, keys[0], down, ""); !errors.Is(err, errBackend) {
		t.Errorf("past stale_if_error, backend down: %v, %v; want the backend's error", o, err)
	}
}

// TestTenantsAndPermissionsNeverShare: keys that differ only in tenant,
// permission set (scope) or variant keep their own bodies on disk across a
// restart, and a value copied under another key's id (what a hash
// collision would look like) is a miss for that key, never its body.
func TestTenantsAndPermissionsNeverShare(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	clock := testkit.NewClock(t0)
	n := start(t, path, clock, disktier.Options{})
	keys := []cache.Key{
		keyOf("harbour", "au/properties", "full+prices|au|json"),
		keyOf("harbour", "au/properties", "full|au|json"),
		keyOf("harbour", "au/properties", "none|au|json"),
		keyOf("summit", "au/properties", "full+prices|au|json"),
		{Tenant: "harbour", Resource: "au/properties", Scope: "full+prices|au|json", Variant: "limit=3"},
	}
	var l loader
	for i, k := range keys {
		if _, _, err := get(t, n, k, &l, "body of "+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	n = restart(t, n, path, clock, disktier.Options{})
	for i, k := range keys {
		body, o, err := get(t, n, k, &loader{err: errBackend}, "")
		if err != nil || o != cache.Hit || body != "body of "+strconv.Itoa(i) {
			t.Errorf("%+v: %q %v %v; want its own body", k, body, o, err)
		}
	}
	n.tier.Flush()
	n.stop()

	// Key 0's value under key 3's id (another tenant).
	db := rawDB(t, path)
	if _, err := db.Exec(`UPDATE entries SET value = (SELECT value FROM entries e2 WHERE e2.id = ?) WHERE id = ?`,
		idOf(t, db, "body of 0"), idOf(t, db, "body of 3")); err != nil {
		t.Fatal(err)
	}
	db.Close()
	n = start(t, path, clock, disktier.Options{})
	l.calls.Store(0)
	body, o, err := get(t, n, keys[3], &l, "summit's own")
	if err != nil || body != "summit's own" || o != cache.Miss || l.calls.Load() != 1 {
		t.Errorf("summit with harbour's value under its id: %q %v %v (%d loads); want a miss and its own fill", body, o, err, l.calls.Load())
	}
}

// rawDB opens the tier's file directly (the tier closed).
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// idOf is the id of the one row whose value holds body.
func idOf(t *testing.T, db *sql.DB, body string) []byte {
	t.Helper()
	var id []byte
	if err := db.QueryRow(`SELECT id FROM entries WHERE instr(value, ?) > 0`, []byte(body)).Scan(&id); err != nil {
		t.Fatalf("row holding %q: %v", body, err)
	}
	return id
}

// TestPurgedEntryNeverComesBack: a purge of every kind (everything, a
// tenant, a resource, a tag), soft or hard, made before a restart still
// holds after it: a soft-purged entry is served only when the fill fails
// (stale-if-error) and otherwise refilled, a hard-purged one never; what
// the purge did not cover is still a hit.
func TestPurgedEntryNeverComesBack(t *testing.T) {
	tag := cache.IDTag("property", 7)
	kept := keyOf("summit", "au/properties", "full|au|json")
	for _, tc := range []struct {
		name  string
		purge func(*cache.Store, cache.PurgeMode)
	}{
		{"all", func(s *cache.Store, m cache.PurgeMode) { s.PurgeAll(m) }},
		{"tenant", func(s *cache.Store, m cache.PurgeMode) { s.Purge("harbour", "", m) }},
		{"resource", func(s *cache.Store, m cache.PurgeMode) { s.Purge("harbour", "au/properties", m) }},
		{"tag", func(s *cache.Store, m cache.PurgeMode) { s.PurgeTags("harbour", []cache.Tag{tag}, m) }},
	} {
		for _, mode := range []cache.PurgeMode{cache.Soft, cache.Hard} {
			t.Run(tc.name+"/"+mode.String(), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "cache.db")
				clock := testkit.NewClock(t0)
				n := start(t, path, clock, disktier.Options{})
				k := keyOf("harbour", "au/properties", "full|au|json")
				var l loader
				if _, _, err := n.store.Get(context.Background(), k, pol, l.of("old", tag)); err != nil {
					t.Fatal(err)
				}
				if tc.name != "all" {
					if _, _, err := n.store.Get(context.Background(), kept, pol, l.of("summit's", tag)); err != nil {
						t.Fatal(err)
					}
				}
				n.tier.Flush() // the entries are on disk before the purge
				tc.purge(n.store, mode)
				n = restart(t, n, path, clock, disktier.Options{})
				if tc.name != "all" {
					if body, o, err := get(t, n, kept, &loader{err: errBackend}, ""); err != nil || o != cache.Hit || body != "summit's" {
						t.Errorf("another tenant's entry: %q %v %v; want a hit", body, o, err)
					}
				}
				body, o, err := get(t, n, k, &loader{err: errBackend}, "")
				switch mode {
				case cache.Soft:
					if err != nil || o != cache.StaleIfError || body != "old" {
						t.Errorf("soft-purged, backend down, after a restart: %q %v %v; want the old body as stale-if-error", body, o, err)
					}
				case cache.Hard:
					if err == nil {
						t.Errorf("hard-purged, backend down, after a restart: %q %v; want the backend's error", body, o)
					}
				}
				// Another restart: the first-tier copy made above is gone,
				// the disk is read again.
				n = restart(t, n, path, clock, disktier.Options{})
				l.calls.Store(0)
				if body, o, err := get(t, n, k, &l, "new"); err != nil || body != "new" || o != cache.Miss || l.calls.Load() != 1 {
					t.Errorf("purged, backend up, after a restart: %q %v %v (%d loads); want a fresh fill", body, o, err, l.calls.Load())
				}
			})
		}
	}
}

// TestPurgeRecordsBounded: past MaxRecords, the oldest records of purges
// by tags are folded into purges of their tenants, on disk too: the table
// stays within the bound and what the folded records covered stays purged
// after a restart.
func TestPurgeRecordsBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	clock := testkit.NewClock(t0)
	o := disktier.Options{MaxRecords: 3}
	n := start(t, path, clock, o)
	k := keyOf("harbour", "au/properties", "full|au|json")
	var l loader
	if _, _, err := n.store.Get(context.Background(), k, pol, l.of("old", cache.IDTag("property", 1))); err != nil {
		t.Fatal(err)
	}
	n.tier.Flush()
	for i := range 6 {
		clock.Advance(time.Second) // the first records expire first
		n.store.PurgeTags("harbour", []cache.Tag{cache.IDTag("property", int64(i+1))}, cache.Hard)
	}
	n.tier.Flush()
	n.stop()
	var records int
	if err := rawDB(t, path).QueryRow(`SELECT COUNT(*) FROM tags`).Scan(&records); err != nil || records != 3 {
		t.Errorf("tag records on disk: %d, %v; want 3", records, err)
	}
	n = start(t, path, clock, o)
	if body, o, err := get(t, n, k, &loader{err: errBackend}, ""); err == nil {
		t.Errorf("an entry whose tag's hard purge was folded into its tenant's: %q %v; want the backend's error", body, o)
	}
}

// TestDamagedEntryIsAMiss: bytes changed on disk in a stored body make
// the entry a miss (counted, deleted), never served.
func TestDamagedEntryIsAMiss(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	clock := testkit.NewClock(t0)
	n := start(t, path, clock, disktier.Options{})
	k := keyOf("harbour", "au/properties", "full|au|json")
	body := listing("damaged")
	var l loader
	if _, _, err := get(t, n, k, &l, body); err != nil {
		t.Fatal(err)
	}
	n.tier.Flush()
	n.stop()
	db := rawDB(t, path)
	var v []byte
	if err := db.QueryRow(`SELECT value FROM entries`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(v), body[20_000:20_040])
	copy(v[i:], "XXXXXXXX")
	if _, err := db.Exec(`UPDATE entries SET value = ?`, v); err != nil {
		t.Fatal(err)
	}
	db.Close()
	n = start(t, path, clock, disktier.Options{})
	got, o, err := get(t, n, k, &l, "refilled")
	if err != nil || got != "refilled" || o != cache.Miss {
		t.Errorf("damaged entry: %v %v (%d bytes); want a miss and the loader's body", o, err, len(got))
	}
	n.tier.Flush()
	if s := n.tier.Stats(); s.Damaged != 1 || s.Hits != 0 {
		t.Errorf("stats %+v; want 1 damaged, 0 hits", s)
	}
}

// TestByteLimit: the entries kept stay within MaxBytes, the least recently
// used going first (a key read since its write stays), and an entry over
// a quarter of the bound is not written.
func TestByteLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	clock := testkit.NewClock(t0)
	n := start(t, path, clock, disktier.Options{})
	var l loader
	key := func(i int) cache.Key { return keyOf("harbour", "au/properties", "full|au|json|"+strconv.Itoa(i)) }
	fill := func(i int) {
		t.Helper()
		if _, _, err := get(t, n, key(i), &l, listing(strconv.Itoa(i))[:45_000]); err != nil {
			t.Fatal(err)
		}
		n.tier.Flush()
	}
	fill(0)
	size := n.tier.Stats().Bytes
	o := disktier.Options{MaxBytes: 8*size + size/2} // eight entries
	n = restart(t, n, path, clock, o)
	for i := 1; i < 8; i++ {
		fill(i)
	}
	if s := n.tier.Stats(); s.Entries != 8 || s.Evictions != 0 {
		t.Fatalf("eight entries within the bound: %+v", s)
	}
	n = restart(t, n, path, clock, o)
	down := &loader{err: errBackend}
	if _, o, _ := get(t, n, key(0), down, ""); o != cache.Hit { // key 0 used again
		t.Fatalf("key 0 after a restart: %v", o)
	}
	n.tier.Flush()
	for i := 8; i < 12; i++ {
		fill(i)
	}
	s := n.tier.Stats()
	if s.Bytes > o.MaxBytes || s.Entries != 8 || s.Evictions != 4 {
		t.Errorf("stats %+v; want at most %d bytes, 8 entries, 4 evictions", s, o.MaxBytes)
	}
	n = restart(t, n, path, clock, o)
	for _, i := range []int{0, 5, 11} {
		if _, o, err := get(t, n, key(i), down, ""); o != cache.Hit {
			t.Errorf("key %d (recently used): %v %v; want a hit", i, o, err)
		}
	}
	for _, i := range []int{1, 4} {
		if _, _, err := get(t, n, key(i), down, ""); err == nil {
			t.Errorf("key %d (least recently used) is still on disk", i)
		}
	}
	if s2 := n.tier.Stats(); s2.Bytes != s.Bytes || s2.Entries != s.Entries {
		t.Errorf("after a restart: %d bytes in %d entries; before %d in %d", s2.Bytes, s2.Entries, s.Bytes, s.Entries)
	}
	if fi, err := os.Stat(path); err != nil {
		t.Error(err)
	} else if fi.Size() > 2*o.MaxBytes {
		t.Errorf("database file: %d bytes; want within twice the bound (%d)", fi.Size(), o.MaxBytes)
	}
	if _, _, err := get(t, n, key(99), &l, listing("big")+listing("bigger")+listing("biggest")+listing("huge")+listing("huger")+listing("hugest")); err != nil {
		t.Fatal(err)
	}
	n.tier.Flush()
	if s := n.tier.Stats(); s.Oversize != 1 {
		t.Errorf("oversize %d; want 1", s.Oversize)
	}
}

// TestQueueFullDrops: while the writer cannot write (another connection
// holds the database's write lock), fills beyond QueueBytes are dropped
// and counted, and the fills themselves are not held up; once the lock
// goes, what was queued is written.
func TestQueueFullDrops(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	clock := testkit.NewClock(t0)
	o := disktier.Options{QueueBytes: 200_000}
	n := start(t, path, clock, o)
	db := rawDB(t, path)
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	var l loader
	key := func(i int) cache.Key { return keyOf("harbour", "au/properties", strconv.Itoa(i)) }
	if _, _, err := get(t, n, key(0), &l, listing("0")); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the writer to take the first entry", func() bool { return n.tier.Stats().QueuedBytes == 0 })
	for i := 1; i <= 10; i++ {
		if _, o, err := get(t, n, key(i), &l, listing(strconv.Itoa(i))); err != nil || o != cache.Miss {
			t.Fatalf("fill %d with the writer stuck: %v %v", i, o, err)
		}
	}
	s := n.tier.Stats()
	if s.Drops == 0 || s.QueuedBytes > o.QueueBytes {
		t.Errorf("stats %+v; want drops and at most %d bytes queued", s, o.QueueBytes)
	}
	if _, err := conn.ExecContext(context.Background(), `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	n.tier.Flush()
	if s2 := n.tier.Stats(); s2.Writes != 11-s.Drops || s2.Errors != 0 {
		t.Errorf("after the lock went: %+v; want %d writes", s2, 11-s.Drops)
	}
}

// TestOneProcessPerFile: a second process opening the same file is
// refused with an error naming it (it would not see the first's purges).
func TestOneProcessPerFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	start(t, path, testkit.NewClock(t0), disktier.Options{})
	_, err := disktier.Open(disktier.Options{Path: path})
	if err == nil || !strings.Contains(err.Error(), "in use by another process") {
		t.Errorf("second Open: %v; want it refused", err)
	}
}

const helperEnv = "LISTINGPROXY_DISKTIER_KILL_HELPER"

func TestMain(m *testing.M) {
	if path := os.Getenv(helperEnv); path != "" {
		killHelper(path)
		return
	}
	os.Exit(m.Run())
}

// killHelper writes entries and purges to path until it is killed,
// printing "flushed N" once entries 0..N-1 are written and "purged N"
// once the purge of tag N has returned.
func killHelper(path string) {
	tier, err := disktier.Open(disktier.Options{Path: path, MaxBytes: 4 << 20})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	for i := 0; ; i++ {
		e := cache.NewEntry([]byte(listing(strconv.Itoa(i))), "application/json", false, time.Now())
		e.Tags = []cache.Tag{cache.Tag(i)}
		tier.Set(context.Background(), killKey(i), uint64(i), e, time.Hour)
		if i%8 == 7 {
			tier.Flush()
			fmt.Println("flushed", i+1)
			if _, err := tier.Purge(context.Background(), cache.Purge{Tenant: "harbour", Tags: []cache.Tag{cache.Tag(i)}, Lifetime: time.Hour}, 0); err != nil {
				fmt.Println("error", err)
				os.Exit(1)
			}
			fmt.Println("purged", i)
		}
	}
}

func killKey(i int) cache.Key { return keyOf("harbour", "au/properties", strconv.Itoa(i)) }

// TestSurvivesKill9: a process writing entries and purges is killed with
// SIGKILL in mid-stream, three times over; each time the file opens
// (SQLite's integrity check passes), every entry it reports written reads
// back whole and checked, nothing read is damaged, and every purge it
// reports recorded is delivered.
func TestSurvivesKill9(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	for round := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), helperEnv+"="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		flushed, purged := 0, -1
		for sc.Scan() && flushed < 80*(round+1) {
			f := strings.Fields(sc.Text())
			if len(f) == 2 && f[0] == "flushed" {
				flushed, _ = strconv.Atoi(f[1])
			} else if len(f) == 2 && f[0] == "purged" {
				purged, _ = strconv.Atoi(f[1])
			} else {
				t.Fatalf("helper: %s", sc.Text())
			}
		}
		// Killed while it writes the next entries.
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		if flushed == 0 {
			t.Fatal("the helper wrote nothing before it was killed")
		}

		tier, err := disktier.Open(disktier.Options{Path: path, MaxBytes: 4 << 20})
		if err != nil {
			t.Fatalf("round %d: reopening after kill -9: %v", round, err)
		}
		var applied []cache.Purge
		tier.Watch(func(p cache.Purge) { applied = append(applied, p) })
		found := 0
		for i := range flushed {
			e, gen, err := tier.Get(context.Background(), killKey(i))
			if err != nil {
				t.Fatalf("round %d: entry %d: %v", round, i, err)
			}
			if e == nil {
				continue // evicted: the bound is 4 MiB
			}
			found++
			if string(e.Body) != listing(strconv.Itoa(i)) || gen != uint64(i) || len(e.Tags) != 1 || e.Tags[0] != cache.Tag(i) {
				t.Fatalf("round %d: entry %d read back wrong", round, i)
			}
		}
		s := tier.Stats()
		tier.Close()
		if found == 0 || s.Damaged != 0 || s.Errors != 0 {
			t.Errorf("round %d: %d of %d written entries found; stats %+v", round, found, flushed, s)
		}
		if purged >= 0 && !purgeApplied(applied, cache.Tag(purged)) {
			t.Errorf("round %d: the purge of tag %d, recorded before the kill, was not delivered", round, purged)
		}
	}
}

func purgeApplied(ps []cache.Purge, tag cache.Tag) bool {
	for _, p := range ps {
		if p.Tenant == "harbour" && len(p.Tags) == 1 && p.Tags[0] == tag {
			return true
		}
	}
	return false
}

// TestUnrecordedPurgeTurnsTheTierOff: a purge the disk cannot record
// (here: another connection holds the write lock past the busy timeout)
// is applied in memory, and the tier deletes its files and serves nothing
// more, so that after a restart the purged entry is not served either:
// the backend down, the hard-purged key is an error, not its old body.
// The purge then holds everywhere: it reports no error (an operator's
// retry would change nothing), nor do later ones.
func TestUnrecordedPurgeTurnsTheTierOff(t *testing.T) {
	defer disktier.SetBusyTimeout(disktier.SetBusyTimeout(100 * time.Millisecond))
	path := filepath.Join(t.TempDir(), "cache.db")
	clock := testkit.NewClock(t0)
	n := start(t, path, clock, disktier.Options{})
	k := keyOf("harbour", "au/properties", "full|au|json")
	var l loader
	if _, _, err := get(t, n, k, &l, "old"); err != nil {
		t.Fatal(err)
	}
	n.tier.Flush()
	conn, err := rawDB(t, path).Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	if err := n.store.PurgeContext(context.Background(), cache.Purge{Tenant: "harbour", Mode: cache.Hard}); err != nil {
		t.Errorf("a purge the disk could not record, its files deleted: %v", err)
	}
	if _, err := conn.ExecContext(context.Background(), `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if _, _, err := get(t, n, k, &loader{err: errBackend}, ""); err == nil {
		t.Error("hard-purged key served in this process")
	}
	if s := n.tier.Stats(); !s.Disabled {
		t.Errorf("stats %+v; want the tier off", s)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("database file after the unrecorded purge: %v; want it deleted", err)
	}
	if err := n.store.PurgeContext(context.Background(), cache.Purge{Tenant: "summit"}); err != nil {
		t.Errorf("a purge with the tier off: %v", err)
	}
	n = restart(t, n, path, clock, disktier.Options{})
	if body, o, err := get(t, n, k, &loader{err: errBackend}, ""); err == nil {
		t.Errorf("hard-purged key after a restart: %q %v; want the backend's error", body, o)
	}
}

// TestDamagedFileMovedAside: a database file whose pages were overwritten
// (a failing disk, a stray write) fails SQLite's check at start: it is
// moved aside and the tier starts empty, so the process starts and serves
// nothing of it; a file that is no database at all (a wrong path) is
// refused, untouched.
func TestDamagedFileMovedAside(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cache.db")
	clock := testkit.NewClock(t0)
	n := start(t, path, clock, disktier.Options{})
	var l loader
	for i := range 20 {
		if _, _, err := get(t, n, keyOf("harbour", "au/properties", strconv.Itoa(i)), &l, listing(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	n.tier.Flush()
	n.stop()
	// Fold the log into the file, then overwrite its second page.
	db := rawDB(t, path)
	if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(strings.Repeat("\xff\x00damage", 400)), 4096); err != nil {
		t.Fatal(err)
	}
	f.Close()

	n = start(t, path, clock, disktier.Options{})
	if s := n.tier.Stats(); s.Entries != 0 || s.Bytes != 0 {
		t.Errorf("after a damaged file: %+v; want an empty tier", s)
	}
	if body, o, err := get(t, n, keyOf("harbour", "au/properties", "0"), &loader{err: errBackend}, ""); err == nil {
		t.Errorf("entry of the damaged file served: %v %d bytes", o, len(body))
	}
	if aside, _ := filepath.Glob(path + ".damaged-*"); len(aside) == 0 {
		t.Error("the damaged file was not moved aside")
	}
	n.stop()

	foreign := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(foreign, []byte(strings.Repeat("not a database\n", 500)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := disktier.Open(disktier.Options{Path: foreign}); err == nil {
		t.Error("a file that is no database was opened")
	}
	if b, err := os.ReadFile(foreign); err != nil || !strings.HasPrefix(string(b), "not a database") {
		t.Errorf("the foreign file was touched: %v", err)
	}
}
