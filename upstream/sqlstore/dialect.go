package sqlstore

import (
	"embed"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
)

//go:embed schema/*.sql
var schemas embed.FS

// dialect is what differs between the SQL engines. Everything else (the query
// builder, the filters, scanning) is shared, so a new engine is one value of
// this interface plus a schema file.
type dialect interface {
	// driverName is the database/sql driver name.
	driverName() string
	// prepareDSN adds the connection settings the store relies on.
	prepareDSN(dsn string) (string, error)
	// schemaFile names the embedded schema under schema/.
	schemaFile() string
	// placeholder returns the n-th (1-based) bind parameter.
	placeholder(n int) string
	// orderTerm returns an ascending ORDER BY term for col with NULLs first;
	// text columns compare byte-wise.
	orderTerm(col string, text, nullable bool) string
	// likeEscape is the ESCAPE clause that makes backslash the LIKE escape
	// character, as likePattern expects.
	likeEscape() string
	// timeArg is the bind value of an instant for a timestamp column.
	timeArg(t time.Time) any
	// dateArg is the bind value of a date, given as "YYYY-MM-DD".
	dateArg(date string) any
	// analyze is run after a bulk load so the planner knows the data.
	analyze() []string
	// systemName is the OpenTelemetry db.system.name of the engine.
	systemName() string
	// noIndex returns col so that the planner does not look it up in an
	// index, only tests it on the rows it reads.
	noIndex(col string) string
	// noRangeIndex returns the numeric column col so that no index serves
	// a range condition on it: the geo walk (geoWalkQuery) reads the scope
	// in the order column's index and tests the box on each row.
	noRangeIndex(col string) string
	// fenceGeoWalk reports that the geo walk tests the box outside a
	// subquery fenced by OFFSET 0 instead (see geoWalkQuery).
	fenceGeoWalk() bool
	// deferredJoinFrom is the offset from which a page without geo is
	// selected by a deferred join (see propertyPageQuery).
	deferredJoinFrom() int
}

func dialectFor(name string) (dialect, error) {
	switch name {
	case "", "sqlite":
		return sqliteDialect{}, nil
	case "postgres":
		return postgresDialect{}, nil
	case "mysql":
		return mysqlDialect{}, nil
	}
	return nil, fmt.Errorf("sqlstore: unknown dialect %q (want sqlite, postgres or mysql)", name)
}

// sqliteTimeLayout is how timestamps are stored on SQLite: ISO-8601 UTC with
// second precision, fixed width, so text order is time order.
const sqliteTimeLayout = "2006-01-02T15:04:05Z"

const dateLayout = "2006-01-02"

// sqliteDialect is modernc.org/sqlite (pure Go, driver "sqlite").
type sqliteDialect struct{}

func (sqliteDialect) driverName() string { return "sqlite" }
func (sqliteDialect) systemName() string { return "sqlite" }
func (sqliteDialect) schemaFile() string { return "sqlite.sql" }

// prepareDSN turns on what the store relies on unless the DSN already sets
// it: a busy timeout (writers wait instead of failing), WAL (readers never
// block on the writer), foreign keys, synchronous=NORMAL (safe with WAL) and
// immediate write transactions (no deadlocking lock upgrades).
func (sqliteDialect) prepareDSN(dsn string) (string, error) {
	if dsn == "" {
		return "", fmt.Errorf("sqlstore: empty DSN")
	}
	base, query, _ := strings.Cut(dsn, "?")
	q, err := url.ParseQuery(query)
	if err != nil {
		return "", fmt.Errorf("sqlstore: DSN query: %w", err)
	}
	has := func(pragma string) bool {
		for _, p := range q["_pragma"] {
			if strings.HasPrefix(strings.ToLower(strings.TrimSpace(p)), pragma) {
				return true
			}
		}
		return false
	}
	for _, p := range []string{"busy_timeout(10000)", "foreign_keys(1)", "journal_mode(WAL)", "synchronous(NORMAL)"} {
		name, _, _ := strings.Cut(p, "(")
		if !has(name) {
			q.Add("_pragma", p)
		}
	}
	if q.Get("_txlock") == "" {
		q.Set("_txlock", "immediate")
	}
	return base + "?" + q.Encode(), nil
}

func (sqliteDialect) placeholder(int) string { return "?" }

// SQLite sorts NULLs first in ascending order and compares text with BINARY
// collation by default.
func (sqliteDialect) orderTerm(col string, _, _ bool) string { return col }
func (sqliteDialect) likeEscape() string                     { return ` ESCAPE '\'` }
func (sqliteDialect) timeArg(t time.Time) any                { return t.UTC().Format(sqliteTimeLayout) }
func (sqliteDialect) dateArg(date string) any                { return date }
func (sqliteDialect) analyze() []string                      { return []string{"ANALYZE"} }

// noIndex is SQLite's unary plus. The per-row check of the dense agent
// filter reads the property's links by property_id (one or two rows) and
// tests agent_id against the list; without it SQLite probes the primary key
// (property_id, agent_id) once per listed agent, 500 probes a row.
func (sqliteDialect) noIndex(col string) string { return "+" + col }

// noRangeIndex is SQLite's unary plus too.
func (sqliteDialect) noRangeIndex(col string) string { return "+" + col }
func (sqliteDialect) fenceGeoWalk() bool             { return false }

// deferredJoinFrom is 0 on SQLite: every page is selected by a deferred
// join. When the rows come from a range of an index not in the ORDER BY's
// order (price_from=500000&price_to=600000: 12,700 entries of
// properties_tc_price_from, sorted by id), SQLite otherwise reads every
// candidate row whole before sorting, where the inner query sorts the ids
// from the index alone; on a page an index yields in order the join adds
// 20 primary-key lookups.
func (sqliteDialect) deferredJoinFrom() int { return 0 }

// mysqlDialect is MySQL or MariaDB through github.com/go-sql-driver/mysql
// with parseTime=true. Timestamps are DATETIME in UTC.
type mysqlDialect struct{}

func (mysqlDialect) driverName() string { return "mysql" }
func (mysqlDialect) systemName() string { return "mysql" }
func (mysqlDialect) schemaFile() string { return "mysql.sql" }

// prepareDSN sets what scanning relies on: parseTime (DATETIME and DATE
// arrive as time.Time) and, unless given, loc=UTC (they are stored in UTC).
func (mysqlDialect) prepareDSN(dsn string) (string, error) {
	if dsn == "" {
		return "", fmt.Errorf("sqlstore: empty DSN")
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "", fmt.Errorf("sqlstore: DSN: %w", err)
	}
	cfg.ParseTime = true
	if cfg.Loc == nil {
		cfg.Loc = time.UTC
	}
	return cfg.FormatDSN(), nil
}
func (mysqlDialect) placeholder(int) string { return "?" }

// MySQL sorts NULLs first in ascending order; text columns are declared
// utf8mb4_bin, so they compare byte-wise.
func (mysqlDialect) orderTerm(col string, _, _ bool) string { return col }
func (mysqlDialect) likeEscape() string                     { return ` ESCAPE '\\'` }
func (mysqlDialect) timeArg(t time.Time) any                { return t.UTC() }
func (mysqlDialect) dateArg(date string) any                { return date }
func (mysqlDialect) noIndex(col string) string              { return col }
func (mysqlDialect) noRangeIndex(col string) string         { return "(" + col + " + 0)" }
func (mysqlDialect) fenceGeoWalk() bool                     { return false }
func (mysqlDialect) deferredJoinFrom() int                  { return deepOffset }

func (mysqlDialect) analyze() []string {
	return []string{"ANALYZE TABLE tenants, agents, properties, property_agents, property_media, openhomes"}
}

// postgresDialect is PostgreSQL through github.com/jackc/pgx/v5/stdlib
// (driver "pgx"). Timestamps are timestamptz, approved is date, text
// columns are declared COLLATE "C" (byte-wise).
type postgresDialect struct{}

func (postgresDialect) driverName() string { return "pgx" }
func (postgresDialect) systemName() string { return "postgresql" }
func (postgresDialect) schemaFile() string { return "postgres.sql" }

// prepareDSN sets random_page_cost=1.1 on the store's sessions unless the
// DSN (or the database's own setting, via the DSN) says otherwise. With the
// default 4.0, meant for spinning disks, PostgreSQL prices a walk of the
// (tenant_id, country, ...) indexes above a walk of the whole primary key for
// "ORDER BY id LIMIT 20" with a range filter, and on a tenant whose ids come
// late reads most of the table to fill a page (250 ms instead of 1 ms at a
// million properties). The setting is per session; the database's other
// clients keep theirs.
func (postgresDialect) prepareDSN(dsn string) (string, error) {
	if dsn == "" {
		return "", fmt.Errorf("sqlstore: empty DSN")
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return "", fmt.Errorf("sqlstore: DSN: %w", err)
	}
	if _, ok := cfg.RuntimeParams["random_page_cost"]; ok {
		return dsn, nil
	}
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("sqlstore: DSN: %w", err)
		}
		q := u.Query()
		q.Set("random_page_cost", "1.1")
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	return dsn + " random_page_cost=1.1", nil
}
func (postgresDialect) placeholder(n int) string { return "$" + strconv.Itoa(n) }

// PostgreSQL sorts NULLs last in ascending order unless told otherwise, and
// compares text by the column's collation: both are made explicit, so a
// legacy view with another collation still orders byte-wise.
func (postgresDialect) orderTerm(col string, text, nullable bool) string {
	if text {
		col += ` COLLATE "C"`
	}
	if nullable {
		// Only where NULLs can be: NULLS FIRST on a NOT NULL column would
		// still keep the planner from reading an ascending index in order.
		col += " NULLS FIRST"
	}
	return col
}
func (postgresDialect) likeEscape() string { return ` ESCAPE '\'` }

func (postgresDialect) noIndex(col string) string      { return col }
func (postgresDialect) noRangeIndex(col string) string { return "(" + col + " + 0)" }
func (postgresDialect) fenceGeoWalk() bool             { return true }
func (postgresDialect) deferredJoinFrom() int          { return deepOffset }
func (postgresDialect) timeArg(t time.Time) any        { return t.UTC() }
func (postgresDialect) dateArg(date string) any {
	t, err := time.Parse(dateLayout, date)
	if err != nil {
		return date // normalize only passes valid dates; let the server judge
	}
	return t
}

// VACUUM after a bulk load also sets the visibility map, so index-only scans
// skip the heap. Tables are named: a bare ANALYZE walks the whole database.
func (postgresDialect) analyze() []string {
	return []string{"VACUUM (ANALYZE) tenants, agents, properties, property_agents, property_media, openhomes"}
}
