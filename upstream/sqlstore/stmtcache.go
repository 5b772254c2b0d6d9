package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/go-sql-driver/mysql"
	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// stmtCache keeps prepared statements by SQL text, evicting the least
// recently used beyond Config.PreparedStatements.
//
// Why: database/sql with modernc.org/sqlite compiles every statement it runs
// (parse, resolve, plan): half the CPU of a list's queries was SQLite's
// sqlite3Prepare (bench/NOTES.md, "Misses"). A *sql.Stmt is prepared
// once on each connection it runs on, and modernc.org/sqlite keeps its
// compiled program and resets it after use. PostgreSQL needs no such cache:
// pgx keeps its own per connection (statement_cache_capacity, 512 by
// default) and database/sql's Stmt would prepare a second copy.
// go-sql-driver/mysql prepares every query with arguments server-side and
// closes it after (three round trips): kept, an id lookup took 0.74-1.05 ms
// p50 at 1M properties instead of 1.55-1.90 (docs/sql.md). Server-side
// statements count against the server's max_prepared_stmt_count, shared by
// every client: the cache is smaller there (DefaultMySQLPreparedStatements),
// and a prepare the server refuses (error 1461) runs the query unprepared
// (see Store.eachOnce, tooManyPrepared).
//
// The order is hashicorp/golang-lru's simplelru, under the cache's own
// mutex: the same lock keeps each statement's count of users, so that an
// evicted statement is closed only once no query uses it.
type stmtCache struct {
	db *sql.DB
	// unprepared counts queries run unprepared because the server refused
	// to prepare them (tooManyPrepared).
	unprepared atomic.Int64
	// prepare prepares a statement; tests replace it to inject failures.
	prepare func(ctx context.Context, text string) (*sql.Stmt, error)

	mu  sync.Mutex
	lru *simplelru.LRU[string, *cachedStmt]
}

type cachedStmt struct {
	text    string
	stmt    *sql.Stmt
	refs    int  // queries between get and their release
	evicted bool // out of the cache: closed when refs falls to 0
}

func newStmtCache(db *sql.DB, size int) *stmtCache {
	c := &stmtCache{db: db, prepare: db.PrepareContext}
	// Evicted under c.mu (by Add): closed now if unused, else by release.
	lru, err := simplelru.NewLRU(max(size, 1), func(_ string, cs *cachedStmt) {
		cs.evicted = true
		if cs.refs == 0 {
			_ = cs.stmt.Close()
		}
	})
	if err != nil {
		panic(err) // the size is at least 1
	}
	c.lru = lru
	return c
}

// get returns the prepared statement of text, preparing it on a miss, and
// a release to call once the query's rows are closed. An evicted statement
// is closed when its last user releases it (database/sql refuses a closed
// statement, and would otherwise wait only for rows already open).
func (c *stmtCache) get(ctx context.Context, text string) (*sql.Stmt, func(), error) {
	c.mu.Lock()
	if cs, ok := c.lru.Get(text); ok {
		cs.refs++
		c.mu.Unlock()
		return cs.stmt, func() { c.release(cs) }, nil
	}
	c.mu.Unlock()

	// Prepared outside the lock: another goroutine may prepare the same
	// text meanwhile; the first to store it wins.
	st, err := c.prepare(ctx, text)
	if err != nil {
		return nil, nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cs, ok := c.lru.Get(text); ok {
		_ = st.Close()
		cs.refs++
		return cs.stmt, func() { c.release(cs) }, nil
	}
	cs := &cachedStmt{text: text, stmt: st, refs: 1}
	c.lru.Add(text, cs)
	return st, func() { c.release(cs) }, nil
}

func (c *stmtCache) release(cs *cachedStmt) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cs.refs--; cs.refs == 0 && cs.evicted {
		_ = cs.stmt.Close()
	}
}

// texts returns the cached statements' texts, most recently used first.
func (c *stmtCache) texts() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.lru.Keys() // oldest first
	slices.Reverse(out)
	return out
}

// close closes every cached statement; the store is closing, so none is
// in use.
func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Purge() // the eviction callback closes each (none is in use)
}

// tooManyPrepared reports MySQL's and MariaDB's refusal to prepare one more
// statement: the server's max_prepared_stmt_count is reached (error 1461,
// ER_MAX_PREPARED_STMT_COUNT_REACHED). The statement itself is fine.
func tooManyPrepared(err error) bool {
	var myErr *mysql.MySQLError
	return errors.As(err, &myErr) && myErr.Number == 1461
}
