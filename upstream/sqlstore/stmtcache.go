package sqlstore

import (
	"container/list"
	"context"
	"database/sql"
	"sync"
)

// maxCachedStatements bounds a store's prepared statements (see stmtCache):
// the texts of a list request are its page statement (one per combination of
// filters and order) and the child-table statements (one per page size), so
// the common shapes of a service fit many times over. Each text is prepared
// at most once per pooled connection; a compiled SQLite statement of the
// store takes a few tens of KB outside the Go heap.
const maxCachedStatements = 64

// stmtCache keeps prepared statements by SQL text, evicting the least
// recently used beyond maxCachedStatements.
//
// Why: database/sql with modernc.org/sqlite compiles every statement it runs
// (parse, resolve, plan): half the CPU of a list's queries was SQLite's
// sqlite3Prepare (docs/performance.md, "Misses"). A *sql.Stmt is prepared
// once on each connection it runs on, and modernc.org/sqlite keeps its
// compiled program and resets it after use. PostgreSQL needs no such cache:
// pgx keeps its own per connection (statement_cache_capacity, 512 by
// default) and database/sql's Stmt would prepare a second copy. MySQL is
// left as it is: server-side statements count against the server's
// max_prepared_stmt_count, shared by every client.
type stmtCache struct {
	db  *sql.DB
	max int

	mu    sync.Mutex
	byTxt map[string]*list.Element // of *cachedStmt
	lru   list.List                // front: most recently used
}

type cachedStmt struct {
	text    string
	stmt    *sql.Stmt
	refs    int  // queries between get and their release
	evicted bool // out of the cache: closed when refs falls to 0
}

func newStmtCache(db *sql.DB, max int) *stmtCache {
	return &stmtCache{db: db, max: max, byTxt: map[string]*list.Element{}}
}

// get returns the prepared statement of text, preparing it on a miss, and
// a release to call once the query's rows are closed. An evicted statement
// is closed when its last user releases it (database/sql refuses a closed
// statement, and would otherwise wait only for rows already open).
func (c *stmtCache) get(ctx context.Context, text string) (*sql.Stmt, func(), error) {
	c.mu.Lock()
	if el, ok := c.byTxt[text]; ok {
		c.lru.MoveToFront(el)
		cs := el.Value.(*cachedStmt)
		cs.refs++
		c.mu.Unlock()
		return cs.stmt, func() { c.release(cs) }, nil
	}
	c.mu.Unlock()

	// Prepared outside the lock: another goroutine may prepare the same
	// text meanwhile; the first to store it wins.
	st, err := c.db.PrepareContext(ctx, text)
	if err != nil {
		return nil, nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byTxt[text]; ok {
		_ = st.Close()
		c.lru.MoveToFront(el)
		cs := el.Value.(*cachedStmt)
		cs.refs++
		return cs.stmt, func() { c.release(cs) }, nil
	}
	cs := &cachedStmt{text: text, stmt: st, refs: 1}
	c.byTxt[text] = c.lru.PushFront(cs)
	for c.lru.Len() > c.max {
		old := c.lru.Remove(c.lru.Back()).(*cachedStmt)
		delete(c.byTxt, old.text)
		old.evicted = true
		if old.refs == 0 {
			_ = old.stmt.Close()
		}
	}
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
	var out []string
	for el := c.lru.Front(); el != nil; el = el.Next() {
		out = append(out, el.Value.(*cachedStmt).text)
	}
	return out
}

// close closes every cached statement; the store is closing, so none is
// in use.
func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for el := c.lru.Front(); el != nil; el = el.Next() {
		_ = el.Value.(*cachedStmt).stmt.Close()
	}
	c.lru.Init()
	clear(c.byTxt)
}
