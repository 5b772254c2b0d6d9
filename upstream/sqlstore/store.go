// Package sqlstore owns the SQL backend of listingproxy: an upstream.Backend
// over the legacy schema of docs/legacy-database.md, its schema files (one
// per dialect, embedded), migration and demo seeding.
//
// SQLite (modernc.org/sqlite, pure Go) is the embedded default; PostgreSQL
// (pgx) and MySQL/MariaDB (go-sql-driver/mysql) are dialects (dialect.go)
// with their own schema files (schema/). All engines share one query
// builder. Queries are always parameterised: the only SQL text built at run
// time is assembled from fixed fragments, with column names taken from
// whitelist maps, never from input.
//
// Semantics shared by every engine: everything is scoped by tenant and
// country; ascending order puts NULLs first and compares text byte-wise, ties
// broken by id; an agent_id names an agent of the tenant and country (see
// resolveAgents); case-insensitive filters compare lower(column) with the
// lower-cased argument (lower() folds ASCII only on SQLite and under
// PostgreSQL's "C" collation, which is enough for the demo's data).
//
// Storage. On SQLite, timestamps (last_updated, open-home start and end) are
// TEXT in ISO-8601 UTC with second precision ("2026-03-14T09:26:53Z"), dates
// (approved) are TEXT "YYYY-MM-DD": fixed width and UTC make byte order time
// order, so SQL comparisons and ORDER BY work on the text. Booleans are 0/1.
// PostgreSQL uses timestamptz and date, MySQL DATETIME (UTC) and DATE.
//
// Geo search. A geo criterion selects properties whose great-circle
// (haversine) distance from the point, on a sphere of EarthRadiusKm, is at
// most the radius. SQL prefilters by a latitude/longitude bounding box (an
// index range scan); the exact distance is checked in Go, and ordering,
// offset and limit are applied after that check, so pages are exact.
//
// Statements. Every statement of a request runs under Config.QueryTimeout
// (within the caller's deadline) and in a span "sql.<statement>" carrying
// only the engine and operation. A read that meets a dead connection drops
// the pool's idle connections and is retried once, so a database restart
// fails only the statements in flight. Explain shows the plans of a list
// request's statements, and PlanProblems what in them reads much more than
// the page needs.
// On SQLite and MySQL/MariaDB the read statements are prepared once per
// connection and kept (stmtCache, up to Config.PreparedStatements texts;
// a MySQL server refusing one more, error 1461, gets the query unprepared),
// and on SQLite the child-table
// statements bind a page's ids as one JSON array (inIDs): compiling them
// was half a list's CPU.
//
// Bulk loading and notifications. Seed streams the demo generator into the
// database in batches (COPY on PostgreSQL, multi-row INSERTs elsewhere);
// on PostgreSQL, InstallNotify and Listen carry change notifications
// (schema/postgres_notify.sql).
//
// Availability. Open does not fail when the database does not answer: the
// store fails every statement with ErrNotReady and prepares itself (ping,
// inspection, Config.Setup) in the background as soon as the database
// answers, so a service can start while its database is down.
//
// It must not import proxy, cache or config: it is configured through Config
// by cmd, and serves upstream's types only.
package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"listingproxy/upstream"
)

// Defaults of Config's zero fields, the one place they are stated
// (docs/configuration.md lists them; cmd's TestDocumentedDefaults checks).
const (
	DefaultMaxOpenConns       = 10
	DefaultSQLiteMaxOpenConns = 4 // one writer at a time: more connections only wait on its lock
	DefaultConnMaxLifetime    = 30 * time.Minute
	DefaultConnMaxIdleTime    = 5 * time.Minute
	DefaultQueryTimeout       = 5 * time.Second
	// DefaultSQLitePreparedStatements: the texts of a list request are its
	// page statement (one per combination of filters and order) and the
	// child-table statements, so the common shapes of a service fit many
	// times over; a compiled SQLite statement of the store takes a few tens
	// of KB outside the Go heap.
	DefaultSQLitePreparedStatements = 64
	// DefaultMySQLPreparedStatements: each text is prepared on every pooled
	// connection it runs on, so a store holds at most this many times
	// MaxOpenConns server-side statements (320 with the defaults), 2% of
	// the server's default max_prepared_stmt_count (16,382), which every
	// client of the server shares.
	DefaultMySQLPreparedStatements = 32
)

// PoolSize is the pool size Open gives a database of dialect for a
// Config.MaxOpenConns of maxOpen (bar an in-memory SQLite database's 1):
// callers sharing the pool out (bulkheads) use it.
func PoolSize(dialect string, maxOpen int) int {
	switch {
	case maxOpen > 0:
		return maxOpen
	case dialect == "" || dialect == "sqlite":
		return DefaultSQLiteMaxOpenConns
	}
	return DefaultMaxOpenConns
}

func queryTimeout(d time.Duration) time.Duration {
	if d == 0 {
		return DefaultQueryTimeout
	}
	return d // negative: none (statement checks > 0)
}

// Config configures Open. Only DSN is required.
type Config struct {
	// Dialect is the SQL engine: "sqlite" (the default when empty),
	// "postgres" or "mysql" (MySQL or MariaDB).
	Dialect string
	// DSN is the data source name of the engine's driver. SQLite: a file
	// path or "file:" URI (modernc.org/sqlite); busy timeout, WAL, foreign
	// keys and immediate write transactions are added unless the DSN sets
	// them. An in-memory SQLite database (":memory:", mode=memory) is
	// per connection, so the store then uses a single connection.
	// PostgreSQL: a pgx connection string. MySQL: a go-sql-driver DSN;
	// parseTime=true and loc=UTC are forced.
	DSN string
	// Now returns the current time; open homes that ended before it are not
	// served. Default time.Now.
	Now func() time.Time
	// MaxOpenConns caps the pool. Default DefaultMaxOpenConns (SQLite:
	// DefaultSQLiteMaxOpenConns; an in-memory SQLite database: 1).
	MaxOpenConns int
	// MaxIdleConns is how many idle connections the pool keeps. Default
	// MaxOpenConns.
	MaxIdleConns int
	// PreparedStatements is how many statement texts are kept prepared
	// (see stmtCache) on SQLite and MySQL/MariaDB; each is prepared once per
	// connection it runs on, so the database holds at most
	// PreparedStatements x MaxOpenConns. Default
	// DefaultSQLitePreparedStatements or DefaultMySQLPreparedStatements.
	// Unused on PostgreSQL (pgx keeps its own cache).
	PreparedStatements int
	// ConnMaxLifetime closes connections this old, so a pool follows a
	// failover or a load balancer's rotation. Default
	// DefaultConnMaxLifetime; negative: never.
	ConnMaxLifetime time.Duration
	// ConnMaxIdleTime closes idle connections after this long. Default
	// DefaultConnMaxIdleTime.
	ConnMaxIdleTime time.Duration
	// QueryTimeout bounds each statement the store runs, on top of the
	// caller's deadline (whichever ends first wins): a request makes several
	// statements, and no single one may hold a connection longer than this.
	// Default DefaultQueryTimeout; negative: no bound but the caller's (a
	// bulk load).
	QueryTimeout time.Duration
	// Logger receives warnings from background work (the change listener's
	// reconnections). Nil: discarded.
	Logger *slog.Logger
	// Setup prepares a database the first time it answers, before the store
	// serves: cmd migrates and seeds the demo database here. Nil: nothing.
	// See Open for when it runs.
	Setup func(ctx context.Context, s *Store) error
	// TracerProvider receives a span per statement, named "sql.<statement>"
	// (sql.list_properties, sql.load_media, ...) with the attributes
	// db.system.name and db.operation.name only: never arguments or SQL
	// text. Nil: no tracing.
	TracerProvider trace.TracerProvider
}

// Store is an upstream.Backend over a SQL database. It is safe for concurrent
// use. Create it with Open; call Migrate before first use of a new database.
type Store struct {
	db *sql.DB
	d  dialect
	// stmts keeps the read statements prepared (SQLite and MySQL; nil on
	// PostgreSQL): see stmtCache.
	stmts *stmtCache
	now   func() time.Time

	dsn          string // as given to the driver; Listen opens its own connection
	log          *slog.Logger
	maxIdle      int
	queryTimeout time.Duration
	tracer       trace.Tracer
	system       attribute.KeyValue // db.system.name
	maxLinked    int                // see resolveAgents; tests lower it
	scopeFirstN  int                // see scopeFirstIDs; tests lower it
	geoProbe     int                // see geoPage; tests lower it
	geoWalkFirst int                // see geoWalkBatch; tests set it

	// ready is set once the database has answered and been prepared (see
	// Open); until then every statement fails with ErrNotReady and wakes
	// the background preparation.
	ready      atomic.Bool
	setup      func(context.Context, *Store) error
	kick       chan struct{}
	stopPrep   context.CancelFunc
	prepDone   chan struct{}
	notReadyMu sync.Mutex
	notReady   error // why the store is not ready

	mu      sync.RWMutex
	tenants map[string]int64 // tenants.name -> id; only names that exist
	// hints are what detectHints found the tables and the engine allow.
	hints hints
}

var _ upstream.Backend = (*Store)(nil)

// ErrNotEmpty is returned by SeedDemo when the store already holds data.
var ErrNotEmpty = errors.New("sqlstore: store is not empty")

// ErrNotReady is the error of every statement while the database has not yet
// answered and been prepared (see Open). It is a failure, not an answer.
var ErrNotReady = errors.New("sqlstore: database not ready")

// Open opens the database described by cfg and prepares it: it checks that
// it answers, inspects it (see detectHints) and runs cfg.Setup. It does not
// create the schema itself; see Migrate.
//
// A database that does not answer is a fault to wait for, not a reason to
// fail: Open still returns the store, which fails every statement with
// ErrNotReady while a background goroutine retries the preparation (after
// 100ms, doubling up to 5s, and at once when a statement finds the store not
// ready), so a process can start while its database is down and serve once
// it is back, without a restart. A database that answers but whose
// preparation fails (a bad schema, missing permissions) is a configuration
// problem: Open returns the error. Invalid configuration (dialect, DSN) is
// also an error.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	d, err := dialectFor(cfg.Dialect)
	if err != nil {
		return nil, err
	}
	dsn, err := d.prepareDSN(cfg.DSN)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(sql.Drivers(), d.driverName()) {
		return nil, fmt.Errorf("sqlstore: database/sql driver %q is not linked in", d.driverName())
	}
	db, err := sql.Open(d.driverName(), dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: open: %w", err)
	}
	maxOpen := cfg.MaxOpenConns
	if maxOpen <= 0 {
		maxOpen = PoolSize(cfg.Dialect, 0)
	}
	if _, ok := d.(sqliteDialect); ok && (strings.Contains(cfg.DSN, ":memory:") || strings.Contains(cfg.DSN, "mode=memory")) {
		maxOpen = 1
	}
	maxIdle := cfg.MaxIdleConns
	if maxIdle <= 0 || maxIdle > maxOpen {
		maxIdle = maxOpen
	}
	db.SetMaxOpenConns(maxOpen)
	db.SetMaxIdleConns(maxIdle)
	switch life := cfg.ConnMaxLifetime; {
	case life == 0:
		db.SetConnMaxLifetime(DefaultConnMaxLifetime)
	case life > 0:
		db.SetConnMaxLifetime(life)
	}
	idle := cfg.ConnMaxIdleTime
	if idle <= 0 {
		idle = DefaultConnMaxIdleTime
	}
	db.SetConnMaxIdleTime(idle)
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	tp := cfg.TracerProvider
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Store{
		db: db, d: d, now: now, dsn: dsn, log: cfg.Logger,
		maxIdle: maxIdle, queryTimeout: queryTimeout(cfg.QueryTimeout),
		tracer:  tp.Tracer("listingproxy/upstream/sqlstore"),
		system:  attribute.String("db.system.name", d.systemName()),
		tenants: map[string]int64{}, maxLinked: defaultMaxLinked, scopeFirstN: scopeFirstIDs, geoProbe: defaultGeoProbe, hints: hints{fromProperties: "properties p"},
		setup: cfg.Setup, kick: make(chan struct{}, 1), prepDone: make(chan struct{}),
	}
	switch d.(type) {
	case sqliteDialect:
		s.stmts = newStmtCache(db, cmp.Or(cfg.PreparedStatements, DefaultSQLitePreparedStatements))
	case mysqlDialect:
		s.stmts = newStmtCache(db, cmp.Or(cfg.PreparedStatements, DefaultMySQLPreparedStatements))
	}
	answered, err := s.prepare(ctx)
	switch {
	case err == nil:
		close(s.prepDone)
		s.stopPrep = func() {}
		return s, nil
	case answered || ctx.Err() != nil:
		db.Close()
		return nil, err
	}
	s.setNotReady(err)
	s.log.Warn("sqlstore: the database does not answer; failing requests until it does", "error", err)
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.stopPrep = cancel
	go s.prepareInBackground(pctx)
	return s, nil
}

// pingTimeout bounds prepare's ping, so that a database behind a black hole
// delays start-up by this much, not forever.
const pingTimeout = 5 * time.Second

// prepare pings the database, inspects it and runs the setup, then marks the
// store ready. answered says whether the database answered the ping.
func (s *Store) prepare(ctx context.Context) (answered bool, err error) {
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	err = s.Ping(pctx)
	cancel()
	if err != nil {
		return false, err
	}
	if err := s.detectHints(ctx); err != nil {
		return true, err
	}
	if s.setup != nil {
		if err := s.setup(ctx, s); err != nil {
			return true, err
		}
	}
	s.ready.Store(true)
	return true, nil
}

// prepareInBackground retries prepare until it succeeds or ctx ends: after
// a jittered backoff from 100ms doubling to 5s (cenkalti/backoff), or as
// soon as a statement finds the store not ready (but never twice within
// 100ms).
func (s *Store) prepareInBackground(ctx context.Context) {
	defer close(s.prepDone)
	const minBackoff = 100 * time.Millisecond
	bo := backoff.NewExponentialBackOff() // jittered: replicas retry out of step
	bo.InitialInterval, bo.MaxInterval = minBackoff, 5*time.Second
	for {
		wait := max(bo.NextBackOff(), minBackoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(minBackoff):
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait - minBackoff):
		case <-s.kick:
		}
		_, err := s.prepare(ctx)
		if err == nil {
			s.log.Info("sqlstore: the database answers; serving")
			return
		}
		if ctx.Err() != nil {
			return
		}
		s.setNotReady(err)
		s.log.Warn("sqlstore: the database is still not ready", "error", err)
	}
}

func (s *Store) setNotReady(err error) {
	s.notReadyMu.Lock()
	s.notReady = err
	s.notReadyMu.Unlock()
}

// Source returns the store's pool and the data source name it was opened
// with, for a change feed that reads the same database (upstream/binlog).
func (s *Store) Source() (*sql.DB, string) { return s.db, s.dsn }

// Ready returns nil once the store serves, else why not (wrapping
// ErrNotReady). A store that is not ready wakes its background preparation.
func (s *Store) Ready() error {
	if s.ready.Load() {
		return nil
	}
	select {
	case s.kick <- struct{}{}:
	default:
	}
	s.notReadyMu.Lock()
	defer s.notReadyMu.Unlock()
	if s.notReady == nil {
		return ErrNotReady
	}
	// The cause stays in the chain: a refused dial is a connection-level
	// failure to upstream/breaker (it opens the backend for every tenant).
	return fmt.Errorf("%w: %w", ErrNotReady, s.notReady)
}

// hints are the index hints and engine features the statements may use,
// as detectHints found them: a legacy table, a view or an older engine
// gets the plain statements.
type hints struct {
	// fromProperties is the FROM item of the page and geo statements.
	fromProperties string
	// agentText are the agents indexes of the name and username filters
	// (by column: "name" -> "agents_tc_name"), see agentPageQuery.
	agentText map[string]string
	// agentScope is "agents_tc_id" when agents has that index on
	// (tenant_id, country, id): scope_agents forces it (see
	// scopeAgentsQuery).
	agentScope string
	// order are the properties indexes of the order fields (by field:
	// "price" -> "properties_tc_price_from_ll"), on (tenant_id, country,
	// column, id, ...): the dense agent walk forces its order's (see
	// pageFrom).
	order map[string]string
	// jsonTable: the engine has JSON_TABLE (MySQL 8, MariaDB 10.6), with
	// which the links of many agents are read (see agentLinksFrom).
	jsonTable bool
}

// detectHints finds what the page statements may use (see hints). On
// MySQL, when properties is a table with a primary key (not a view: views
// take no index hints), the FROM item is "properties p IGNORE INDEX FOR
// ORDER BY (PRIMARY)": for "ORDER BY id LIMIT 20" with a filter, MySQL
// otherwise walks the clustered primary key from the first row, which for a
// tenant whose ids come late is most of the table (0.7 s at a million
// properties), instead of the (tenant_id, country, ...) indexes, which hold
// the primary key in order too. Open and Migrate call it.
//
// It also finds which of the indexes of schema/mysql.sql that some
// statements force the tables have, under those names and on those
// columns: agents_tc_name and agents_tc_username (an agent list filtered by
// name or username, see agentPageQuery), agents_tc_id (scope_agents) and
// the properties_tc_COLUMN_ll of the order fields (the dense agent walk). A
// view or a table without one keeps the plain statement, which a forced
// index it lacks would make fail.
func (s *Store) detectHints(ctx context.Context) error {
	h := hints{fromProperties: "properties p"}
	if _, ok := s.d.(mysqlDialect); ok {
		indexes, err := s.mysqlIndexes(ctx)
		if err != nil {
			return fmt.Errorf("sqlstore: inspect indexes: %w", err)
		}
		if _, ok := indexes["properties"]["PRIMARY"]; ok {
			h.fromProperties = "properties p IGNORE INDEX FOR ORDER BY (PRIMARY)"
			h.order = map[string]string{}
			for field, c := range propertyOrder {
				col := strings.TrimPrefix(c.expr, "p.")
				want := "tenant_id,country," + col + ",id"
				if col == "id" {
					want = "tenant_id,country,id"
				}
				name := "properties_tc_" + col + "_ll"
				if cols, ok := indexes["properties"][name]; ok && (cols == want || strings.HasPrefix(cols, want+",")) {
					h.order[field] = name
				}
			}
		}
		h.agentText = map[string]string{}
		for _, col := range []string{"name", "username"} {
			if name := "agents_tc_" + col; indexes["agents"][name] == "tenant_id,country,"+col {
				h.agentText[col] = name
			}
		}
		if indexes["agents"]["agents_tc_id"] == "tenant_id,country,id" {
			h.agentScope = "agents_tc_id"
		}
		// A probe, not the version (MySQL and MariaDB number theirs
		// apart), with the array bound as agentLinksFrom binds it.
		var n int
		h.jsonTable = s.db.QueryRowContext(ctx, "SELECT count(*) FROM JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$')) j", jsonIDs([]int64{4, 9})).Scan(&n) == nil && n == 2
	}
	s.mu.Lock()
	s.hints = h
	s.mu.Unlock()
	return nil
}

// mysqlIndexes returns the indexes of the tables properties and agents, by
// table and name, each as its columns in order, comma-separated (lower
// case); a view has none.
func (s *Store) mysqlIndexes(ctx context.Context) (map[string]map[string]string, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT TABLE_NAME, INDEX_NAME, GROUP_CONCAT(COLUMN_NAME ORDER BY SEQ_IN_INDEX) "+
		"FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN ('properties', 'agents') "+
		"GROUP BY TABLE_NAME, INDEX_NAME")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	found := map[string]map[string]string{}
	for rows.Next() {
		var table, name, cols string
		if err := rows.Scan(&table, &name, &cols); err != nil {
			return nil, err
		}
		table = strings.ToLower(table)
		if found[table] == nil {
			found[table] = map[string]string{}
		}
		found[table][name] = strings.ToLower(cols)
	}
	return found, rows.Err()
}

// currentHints returns what detectHints found last.
func (s *Store) currentHints() hints {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.hints
}

// agentTextIndex is the index agentPageQuery forces for a filter on the
// agents column col ("name" or "username"), or "" for none.
func (s *Store) agentTextIndex(col string) string {
	return s.currentHints().agentText[col]
}

// Close stops the background preparation, if any, and closes the database.
func (s *Store) Close() error {
	s.stopPrep()
	<-s.prepDone
	if s.stmts != nil {
		s.stmts.close()
	}
	return s.db.Close()
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.db.PingContext(ctx); err != nil {
		return fmt.Errorf("sqlstore: ping: %w", err)
	}
	return nil
}

// Migrate creates the schema where it is missing. It is idempotent: it never
// changes or drops an existing table.
func (s *Store) Migrate(ctx context.Context) error {
	text, err := schemas.ReadFile("schema/" + s.d.schemaFile())
	if err != nil {
		return fmt.Errorf("sqlstore: migrate: %w", err)
	}
	for _, stmt := range splitStatements(string(text)) {
		if _, err := s.db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("sqlstore: migrate: %w", err)
		}
	}
	if _, ok := s.d.(mysqlDialect); ok {
		if err := s.upgradeMySQLIndexes(ctx); err != nil {
			return fmt.Errorf("sqlstore: migrate: %w", err)
		}
	}
	return s.detectHints(ctx)
}

// mysqlOrderIndexColumns are the order columns whose properties index holds
// id, latitude and longitude on MySQL (schema/mysql.sql, suffix _ll).
var mysqlOrderIndexColumns = []string{"id", "agency_id", "status", "category", "property_type", "approved",
	"last_updated", "price_from", "bedrooms", "bathrooms", "suburb"}

// upgradeMySQLIndexes brings the indexes of a MySQL properties table
// created by an older listingproxy to those of schema/mysql.sql, whose
// CREATE TABLE IF NOT EXISTS leaves an existing table as it is: it adds
// each missing properties_tc_COLUMN_ll (tenant_id, country, COLUMN, id,
// latitude, longitude) and drops the properties_tc_COLUMN it replaces, in
// one ALTER TABLE (in place, without locking the table; MySQL 8 has no ADD
// INDEX IF NOT EXISTS). A view (no indexes) is left alone.
func (s *Store) upgradeMySQLIndexes(ctx context.Context) error {
	rows, err := s.db.QueryContext(ctx, "SELECT DISTINCT INDEX_NAME FROM information_schema.STATISTICS "+
		"WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'properties'")
	if err != nil {
		return fmt.Errorf("inspect properties: %w", err)
	}
	have := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return fmt.Errorf("inspect properties: %w", err)
		}
		have[name] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("inspect properties: %w", err)
	}
	if len(have) == 0 {
		return nil // a view
	}
	var clauses []string
	for _, c := range mysqlOrderIndexColumns {
		name, old := "properties_tc_"+c+"_ll", "properties_tc_"+c
		if !have[name] {
			cols := "tenant_id, country, " + c + ", id, latitude, longitude"
			if c == "id" {
				cols = "tenant_id, country, id, latitude, longitude"
			}
			clauses = append(clauses, "ADD KEY "+name+" ("+cols+")")
		}
		if have[old] {
			clauses = append(clauses, "DROP KEY "+old)
		}
	}
	if len(clauses) == 0 {
		return nil
	}
	stmt := "ALTER TABLE properties " + strings.Join(clauses, ", ") + ", ALGORITHM=INPLACE, LOCK=NONE"
	if _, err := s.db.ExecContext(ctx, stmt); err != nil {
		return fmt.Errorf("add the _ll indexes: %w", err)
	}
	return nil
}

// Analyze refreshes the planner's statistics of the six tables (SQLite:
// ANALYZE; MySQL: ANALYZE TABLE; PostgreSQL: VACUUM (ANALYZE), which also
// sets the visibility map that index-only scans rely on). Seed runs it after
// a bulk load; run it after Migrate has built new indexes on a large
// database: SQLite plans with an index's own statistics, and without them
// guesses.
func (s *Store) Analyze(ctx context.Context) error {
	for _, stmt := range s.d.analyze() {
		if _, err := s.db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("sqlstore: analyze: %w", err)
		}
	}
	return nil
}

// splitStatements splits a schema file into statements: each ends with a
// semicolon at the end of a line; lines starting with "--" are comments.
func splitStatements(text string) []string {
	var out []string
	var b strings.Builder
	for line := range strings.Lines(text) {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "--") {
			continue
		}
		b.WriteString(line)
		if strings.HasSuffix(trimmed, ";") {
			out = append(out, strings.TrimSuffix(strings.TrimSpace(b.String()), ";"))
			b.Reset()
		}
	}
	if rest := strings.TrimSpace(b.String()); rest != "" {
		out = append(out, rest)
	}
	return out
}

// Empty reports whether the store holds no tenant (and so no data). The
// schema must exist.
func (s *Store) Empty(ctx context.Context) (bool, error) {
	var one int
	err := s.db.QueryRowContext(ctx, "SELECT 1 FROM tenants LIMIT 1").Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("sqlstore: empty: %w", err)
	}
	return false, nil
}

// tenantID resolves a tenant name to its id. ok is false for an unknown
// tenant, which is not an error: it has no data. Known names are cached for
// the life of the store (tenant ids never change); unknown ones are looked up
// again, so a tenant added later is found.
func (s *Store) tenantID(ctx context.Context, name string) (id int64, ok bool, err error) {
	s.mu.RLock()
	id, ok = s.tenants[name]
	s.mu.RUnlock()
	if ok {
		return id, true, nil
	}
	q := newQuery(s.d)
	q.add("SELECT id FROM tenants WHERE name = " + q.arg(name))
	err = s.each(ctx, "lookup_tenant", q, func(rows *sql.Rows) error {
		ok = true
		return rows.Scan(&id)
	})
	switch {
	case err != nil:
		return 0, false, fmt.Errorf("tenant %q: %w", name, err)
	case !ok:
		return 0, false, nil
	}
	s.mu.Lock()
	s.tenants[name] = id
	s.mu.Unlock()
	return id, true, nil
}
