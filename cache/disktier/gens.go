package disktier

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"time"

	"listingproxy/cache"
)

// scope names a purge's row in the scopes table: kind "a" (all), "t" (a
// tenant) or "r" (a tenant's resource).
func scope(p cache.Purge) (kind, tenant, resource string) {
	switch {
	case p.All:
		return "a", "", ""
	case p.Resource == "":
		return "t", p.Tenant, ""
	}
	return "r", p.Tenant, p.Resource
}

// Purge implements cache.Generations: it records p durably (the epoch
// counter and p's record in one transaction, synchronous=FULL: on the disk
// when Purge returns) before the Store applies it, so a purged entry is
// never served after a restart. A purge by tags is recorded per tenant and
// tag until p.Lifetime has passed (every entry it may cover is dead then);
// past MaxRecords, the records closest to expiry are folded into their
// tenants' records, as the Store folds its own table.
//
// A purge that cannot be recorded (disk full, I/O error) would leave on
// disk entries it covers, which a restart would serve: the tier then
// deletes its files and serves nothing more (Stats.Disabled), and the
// purge, applied by the Store in memory, holds everywhere. From then on
// purges are this process's alone, as without a tier. Purge reports an
// error only when the files could not be deleted.
func (t *Tier) Purge(ctx context.Context, p cache.Purge, after uint64) (uint64, error) {
	if t.disabled.Load() {
		return t.offPurge(after)
	}
	epoch, err := t.record(context.WithoutCancel(ctx), p, after)
	if err != nil {
		t.disable(err)
		return t.offPurge(after)
	}
	t.purges.Add(1)
	return epoch, nil
}

// offPurge is a purge once the tier is off: the next epoch, as
// cache.Generations' default gives, or an error while files that a
// restart would read are left.
func (t *Tier) offPurge(after uint64) (uint64, error) {
	if t.undeleted.Load() {
		return 0, fmt.Errorf("disktier: a purge could not be recorded and %s could not be deleted: a restart would serve what it covered", t.path)
	}
	return after + 1, nil
}

func (t *Tier) record(ctx context.Context, p cache.Purge, after uint64) (uint64, error) {
	tx, err := t.pdb.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback() }()
	var cur int64
	if err := tx.QueryRowContext(ctx, `SELECT v FROM meta WHERE k = 'epoch'`).Scan(&cur); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, err
	}
	epoch := max(uint64(cur), after) + 1
	if _, err := tx.ExecContext(ctx, `INSERT INTO meta(k, v) VALUES('epoch', ?) ON CONFLICT(k) DO UPDATE SET v = excluded.v`, int64(epoch)); err != nil {
		return 0, err
	}
	hard := int64(0)
	if p.Mode == cache.Hard {
		hard = int64(epoch)
	}
	if len(p.Tags) > 0 && !p.All {
		now := t.now()
		expires := now.Add(max(p.Lifetime, time.Minute)).UnixNano()
		for _, tg := range p.Tags {
			if _, err := tx.ExecContext(ctx, `INSERT INTO tags(tenant, tag, fill, hard, expires) VALUES(?, ?, ?, ?, ?)
				ON CONFLICT(tenant, tag) DO UPDATE SET fill = excluded.fill, hard = max(hard, excluded.hard), expires = excluded.expires`,
				p.Tenant, int64(tg), int64(epoch), hard, expires); err != nil {
				return 0, err
			}
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM tags WHERE expires <= ?`, now.UnixNano()); err != nil {
			return 0, err
		}
		if err := t.fold(ctx, tx); err != nil {
			return 0, err
		}
	} else {
		kind, tenant, resource := scope(p)
		if _, err := tx.ExecContext(ctx, `INSERT INTO scopes(kind, tenant, resource, fill, hard) VALUES(?, ?, ?, ?, ?)
			ON CONFLICT(kind, tenant, resource) DO UPDATE SET fill = excluded.fill, hard = max(hard, excluded.hard)`,
			kind, tenant, resource, int64(epoch), hard); err != nil {
			return 0, err
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, err
	}
	return epoch, nil
}

// fold folds the tag records past MaxRecords, those closest to expiry
// first, into purges of their tenants at their epochs: more is purged,
// nothing wrongly kept.
func (t *Tier) fold(ctx context.Context, tx *sql.Tx) error {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM tags`).Scan(&n); err != nil {
		return err
	}
	if n <= t.maxRecords {
		return nil
	}
	rows, err := tx.QueryContext(ctx, `DELETE FROM tags WHERE rowid IN (SELECT rowid FROM tags ORDER BY expires LIMIT ?)
		RETURNING tenant, fill, hard`, n-t.maxRecords)
	if err != nil {
		return err
	}
	type rec struct{ fill, hard int64 }
	folded := map[string]rec{}
	for rows.Next() {
		var tenant string
		var r rec
		if err := rows.Scan(&tenant, &r.fill, &r.hard); err != nil {
			rows.Close()
			return err
		}
		c := folded[tenant]
		folded[tenant] = rec{max(c.fill, r.fill), max(c.hard, r.hard)}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for tenant, r := range folded {
		if _, err := tx.ExecContext(ctx, `INSERT INTO scopes(kind, tenant, resource, fill, hard) VALUES('t', ?, '', ?, ?)
			ON CONFLICT(kind, tenant, resource) DO UPDATE SET fill = max(fill, excluded.fill), hard = max(hard, excluded.hard)`,
			tenant, r.fill, r.hard); err != nil {
			return err
		}
	}
	return nil
}

// disable turns the tier off after a purge it could not record: reads
// miss, writes are dropped, and the database's files are deleted, so that
// a restart starts empty rather than serve what the purge covered.
func (t *Tier) disable(cause error) {
	if t.disabled.Swap(true) {
		return
	}
	var failed []string
	for _, f := range []string{t.path, t.path + "-wal", t.path + "-shm"} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			failed = append(failed, f)
		}
	}
	t.undeleted.Store(len(failed) > 0)
	t.log.Error("disktier: a purge could not be recorded on disk: the disk tier is off until a restart, its files deleted",
		"path", t.path, "err", cause, "not_deleted", failed)
}

// Watch implements cache.Generations: it delivers every purge recorded on
// disk, at once (the Store calls it from cache.New), so that the entries
// on disk are judged by them; no purge comes from elsewhere.
func (t *Tier) Watch(apply func(cache.Purge)) {
	if err := t.watch(apply); err != nil {
		// Open read these tables already; a failure now leaves purges
		// undelivered, so nothing on disk may be served.
		t.disable(err)
	}
}

func (t *Tier) watch(apply func(cache.Purge)) error {
	deliver := func(p cache.Purge, fill, hard int64) {
		if hard > 0 {
			p.Mode, p.Epoch = cache.Hard, uint64(hard)
			apply(p)
		}
		if fill > hard {
			p.Mode, p.Epoch = cache.Soft, uint64(fill)
			apply(p)
		}
	}
	// The tags first, as redistier's sync: nothing folds them meanwhile
	// (one process), but the order costs nothing.
	rows, err := t.pdb.Query(`SELECT tenant, tag, fill, hard FROM tags WHERE expires > ?`, t.now().UnixNano())
	if err != nil {
		return err
	}
	for rows.Next() {
		var tenant string
		var tag, fill, hard int64
		if err := rows.Scan(&tenant, &tag, &fill, &hard); err != nil {
			rows.Close()
			return err
		}
		deliver(cache.Purge{Tenant: tenant, Tags: []cache.Tag{cache.Tag(tag)}}, fill, hard)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	rows, err = t.pdb.Query(`SELECT kind, tenant, resource, fill, hard FROM scopes`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var kind, tenant, resource string
		var fill, hard int64
		if err := rows.Scan(&kind, &tenant, &resource, &fill, &hard); err != nil {
			return err
		}
		deliver(cache.Purge{All: kind == "a", Tenant: tenant, Resource: resource}, fill, hard)
	}
	return rows.Err()
}

// Covering implements cache.Generations: this process records every purge
// before it applies it, and no other process shares the file, so nothing
// recorded here is unknown to the Store.
func (t *Tier) Covering(context.Context, cache.Key, []cache.Tag) (uint64, error) { return 0, nil }
