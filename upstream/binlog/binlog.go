// Package binlog is the MariaDB/MySQL binlog change feed ("binlog"): it
// reads the source's replication stream as a replica would, with
// github.com/go-mysql-org/go-mysql (the stream only: a cache never needs a
// snapshot or a dump), and reports each row event on a mapped table of the
// legacy schema as a change of its entities, in their tenant
// (docs/sql.md, "Change feeds").
//
// It starts at the source's current position on every (re)connection and
// reports a gap of every tenant then, since changes made meanwhile were not
// seen: a purged binlog, a failover or an unknown position is a soft purge,
// never a stale answer kept. A stream silent for three heartbeats is dead
// and reconnected, with jittered exponential backoff (cenkalti/backoff).
//
// It imports upstream (the feed contract), the MySQL driver (to read the
// DSN) and go-mysql; it reads the schema through a *sql.DB it is given.
package binlog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v5"
	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/go-sql-driver/mysql"

	"listingproxy/upstream"
)

// Table says what the rows of one table are, for the binlog feed:
// which resource their changes concern, and which columns name the entity
// and its tenant.
type Table struct {
	// Resource is upstream.ResourceProperties or ResourceAgents.
	Resource string
	// ID is the column holding the entity's id (a property's or an
	// agent's); "" for a table of a property's parts, which names
	// Property instead.
	ID string
	// Tenant is the column holding the row's tenants.id; "" when the
	// tenant is the property's (Property).
	Tenant string
	// Property is the column holding the id of the property the row is a
	// part of (media, open homes, agent links), whose tenant is looked up.
	Property string
	// Agent is a column holding an agent's id whose document the row is
	// part of too (an agent link).
	Agent string
}

// DefaultTables map the legacy schema's tables (docs/legacy-database.md).
var DefaultTables = map[string]Table{
	"properties":      {Resource: upstream.ResourceProperties, ID: "id", Tenant: "tenant_id"},
	"agents":          {Resource: upstream.ResourceAgents, ID: "id", Tenant: "tenant_id"},
	"property_agents": {Resource: upstream.ResourceProperties, Property: "property_id", Agent: "agent_id"},
	"property_media":  {Resource: upstream.ResourceProperties, Property: "property_id"},
	"openhomes":       {Resource: upstream.ResourceProperties, Property: "property_id"},
}

// Options configure the binlog feed.
type Options struct {
	// ServerID is the replica id the feed registers with (unique among
	// the source's replicas). Default: a random id in [1<<30, 1<<31).
	ServerID uint32
	// Tables maps the tables whose row events become changes, in the
	// store's database. Default DefaultTables.
	Tables map[string]Table
	// Heartbeat is the source's heartbeat period: a stream silent for
	// three of them is dead and reconnected. Default 1s.
	Heartbeat time.Duration
	// Where names the feed's configuration in errors
	// ("backends.main.binlog"). Default "binlog".
	Where string
}

// New returns the binlog feed of the database db, opened with the MySQL
// driver's dsn (the feed connects to the same server with the same user
// for the stream).
func New(db *sql.DB, dsn string, log *slog.Logger, o Options) (*Feed, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("binlog: %w", err)
	}
	host, port, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("binlog: address %q: %w", cfg.Addr, err)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("binlog: port %q: %w", port, err)
	}
	if o.ServerID == 0 {
		o.ServerID = 1<<30 + rand.Uint32N(1<<30)
	}
	if o.Tables == nil {
		o.Tables = DefaultTables
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = time.Second
	}
	if o.Where == "" {
		o.Where = "binlog"
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Feed{db: db, log: log, o: o, host: host, port: uint16(p), user: cfg.User, pass: cfg.Passwd, schema: cfg.DBName}, nil
}

// Feed is the binlog feed of one database.
type Feed struct {
	db          *sql.DB
	log         *slog.Logger
	o           Options
	host        string
	port        uint16
	user, pass  string
	schema      string
	mu          sync.Mutex
	tenantNames map[int64]string // tenants.id -> name
	columns     map[string]map[string]int
	lastLive    time.Time
}

// Name implements upstream.ChangeFeed.
func (*Feed) Name() string { return "binlog" }

// Watch implements upstream.ChangeFeed. Before its first connection it
// checks what the stream needs of the source (log_bin on, binlog_format
// ROW, binlog_row_image FULL, the REPLICATION SLAVE and REPLICATION
// CLIENT privileges) and returns an error naming what is missing, located
// at Options.Where; a source that cannot be reached is retried instead.
func (f *Feed) Watch(ctx context.Context, sink upstream.ChangeSink) error {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval = 100*time.Millisecond, 30*time.Second
	checked := false
	for ctx.Err() == nil {
		if !checked {
			switch err := f.check(ctx); {
			case errors.Is(err, errMisconfigured):
				return err
			case refused(err):
				return fmt.Errorf("%s: %w", f.o.Where, err)
			case err != nil:
				sink.Live(err)
				if !f.sleep(ctx, b.NextBackOff()) {
					return nil
				}
				continue
			}
			checked = true
		}
		streamed, err := f.stream(ctx, sink)
		if ctx.Err() != nil {
			break
		}
		if streamed {
			b.Reset()
		}
		sink.Live(err)
		wait := b.NextBackOff()
		f.log.Warn("binlog: stream lost; reconnecting", "error", err, "retry_in", wait.String())
		if !f.sleep(ctx, wait) {
			break
		}
	}
	return nil
}

func (f *Feed) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// refused reports whether err is the server refusing the feed's user (a
// wrong password, no access to the database, a missing privilege): a
// misconfiguration that retrying cannot mend.
func refused(err error) bool {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return false
	}
	switch me.Number {
	case 1044, 1045, 1049, 1142, 1227, 1698: // access denied (database, user), unknown database, command denied, privilege needed
		return true
	}
	return false
}

// errMisconfigured marks a check's failure that retrying cannot mend.
var errMisconfigured = errors.New("misconfigured")

// check verifies what the stream needs of the source.
func (f *Feed) check(ctx context.Context) error {
	var logBin, format, image string
	if err := f.db.QueryRowContext(ctx, "SELECT @@log_bin, @@binlog_format, @@binlog_row_image").Scan(&logBin, &format, &image); err != nil {
		return err
	}
	var problems []string
	if logBin != "1" && !strings.EqualFold(logBin, "ON") {
		problems = append(problems, "the server's binary log is off (start it with --log-bin)")
	}
	if !strings.EqualFold(format, "ROW") {
		problems = append(problems, fmt.Sprintf("binlog_format is %s; the feed needs ROW (SET GLOBAL binlog_format = 'ROW', and binlog_format = ROW in the server's configuration)", format))
	}
	if !strings.EqualFold(image, "FULL") {
		problems = append(problems, fmt.Sprintf("binlog_row_image is %s; the feed needs FULL", image))
	}
	rows, err := f.db.QueryContext(ctx, "SHOW GRANTS")
	if err != nil {
		return err
	}
	defer rows.Close()
	var grants []string
	for rows.Next() {
		var g string
		if err := rows.Scan(&g); err != nil {
			return err
		}
		grants = append(grants, strings.ToUpper(g))
	}
	if err := rows.Err(); err != nil {
		return err
	}
	has := func(privs ...string) bool {
		for _, g := range grants {
			if !strings.Contains(g, " ON *.* ") {
				continue
			}
			if strings.Contains(g, "ALL PRIVILEGES") {
				return true
			}
			for _, p := range privs {
				if strings.Contains(g, p) {
					return true
				}
			}
		}
		return false
	}
	if !has("REPLICATION SLAVE", "REPLICATION REPLICA") {
		problems = append(problems, fmt.Sprintf("user %s lacks REPLICATION SLAVE (GRANT REPLICATION SLAVE ON *.* TO ...)", f.user))
	}
	if !has("REPLICATION CLIENT", "BINLOG MONITOR") {
		problems = append(problems, fmt.Sprintf("user %s lacks REPLICATION CLIENT (BINLOG MONITOR on MariaDB; GRANT REPLICATION CLIENT ON *.* TO ...)", f.user))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s: %s: %w", f.o.Where, strings.Join(problems, "; "), errMisconfigured)
	}
	return nil
}

// stream connects at the source's current position, reports a gap and
// then the changes, until the stream fails or ctx ends. streamed says
// whether it got as far as reading.
func (f *Feed) stream(ctx context.Context, sink upstream.ChangeSink) (streamed bool, err error) {
	pos, flavor, err := f.position(ctx)
	if err != nil {
		return false, err
	}
	if err := f.loadColumns(ctx); err != nil {
		return false, err
	}
	syncer := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{
		ServerID: f.o.ServerID, Flavor: flavor, Host: f.host, Port: f.port, User: f.user, Password: f.pass,
		HeartbeatPeriod: f.o.Heartbeat, ReadTimeout: 3 * f.o.Heartbeat, DisableRetrySync: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	defer syncer.Close()
	st, err := syncer.StartSync(pos)
	if err != nil {
		return false, err
	}
	// Changes made before this position were not seen.
	sink.Changed(upstream.Change{Tenant: upstream.AllTenants, Gap: true})
	sink.Live(nil)
	for {
		ev, err := st.GetEvent(ctx)
		if err != nil {
			return true, err
		}
		if now := time.Now(); now.Sub(f.lastLive) >= f.o.Heartbeat {
			f.lastLive = now
			sink.Live(nil)
		}
		at := time.Unix(int64(ev.Header.Timestamp), 0)
		switch e := ev.Event.(type) {
		case *replication.RowsEvent:
			if string(e.Table.Schema) != f.schema {
				continue
			}
			table := string(e.Table.Table)
			m, ok := f.o.Tables[table]
			if !ok {
				continue
			}
			cs, err := f.changes(ctx, table, m, e, at)
			if err != nil {
				return true, err
			}
			for _, c := range cs {
				sink.Changed(c)
			}
		case *replication.QueryEvent:
			if f.touches(e) {
				// A TRUNCATE, or a statement changing a mapped table's shape:
				// anything may have changed, and the columns are read again.
				if err := f.loadColumns(ctx); err != nil {
					return true, err
				}
				sink.Changed(upstream.Change{Tenant: upstream.AllTenants, At: at})
			}
		}
	}
}

// position returns the source's current binlog position and flavor.
func (f *Feed) position(ctx context.Context) (gomysql.Position, string, error) {
	var version string
	if err := f.db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		return gomysql.Position{}, "", err
	}
	flavor := gomysql.MySQLFlavor
	if strings.Contains(strings.ToLower(version), "mariadb") {
		flavor = gomysql.MariaDBFlavor
	}
	rows, err := f.db.QueryContext(ctx, "SHOW MASTER STATUS")
	if err != nil {
		// MySQL 8.4 renamed it.
		if rows, err = f.db.QueryContext(ctx, "SHOW BINARY LOG STATUS"); err != nil {
			return gomysql.Position{}, "", err
		}
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return gomysql.Position{}, "", err
	}
	if !rows.Next() {
		return gomysql.Position{}, "", fmt.Errorf("%s: the server reports no binary log position (is log_bin on?)", f.o.Where)
	}
	vals := make([]any, len(cols))
	var file string
	var p uint32
	for i := range vals {
		vals[i] = new(any)
	}
	vals[0], vals[1] = &file, &p
	if err := rows.Scan(vals...); err != nil {
		return gomysql.Position{}, "", err
	}
	return gomysql.Position{Name: file, Pos: p}, flavor, rows.Err()
}

// loadColumns reads the ordinal position of every mapped column, and the
// tenants' names.
func (f *Feed) loadColumns(ctx context.Context) error {
	cols := map[string]map[string]int{}
	for table := range f.o.Tables {
		rows, err := f.db.QueryContext(ctx, "SELECT COLUMN_NAME, ORDINAL_POSITION FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", f.schema, table)
		if err != nil {
			return err
		}
		m := map[string]int{}
		for rows.Next() {
			var name string
			var pos int
			if err := rows.Scan(&name, &pos); err != nil {
				rows.Close()
				return err
			}
			m[strings.ToLower(name)] = pos - 1
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		cols[table] = m
	}
	f.mu.Lock()
	f.columns = cols
	f.mu.Unlock()
	return f.loadTenants(ctx)
}

func (f *Feed) loadTenants(ctx context.Context) error {
	rows, err := f.db.QueryContext(ctx, "SELECT id, name FROM tenants")
	if err != nil {
		return err
	}
	defer rows.Close()
	names := map[int64]string{}
	for rows.Next() {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			return err
		}
		names[id] = name
	}
	f.mu.Lock()
	f.tenantNames = names
	f.mu.Unlock()
	return rows.Err()
}

// touches reports whether a statement event is a TRUNCATE or a change of
// shape (ALTER, DROP, RENAME, CREATE) of a mapped table of the schema.
func (f *Feed) touches(e *replication.QueryEvent) bool {
	q := strings.ToUpper(strings.TrimSpace(string(e.Query)))
	if !(strings.HasPrefix(q, "TRUNCATE") || strings.HasPrefix(q, "ALTER") || strings.HasPrefix(q, "DROP") ||
		strings.HasPrefix(q, "RENAME") || strings.HasPrefix(q, "CREATE")) {
		return false
	}
	if s := string(e.Schema); s != "" && s != f.schema && !strings.Contains(q, strings.ToUpper(f.schema)+".") {
		return false
	}
	for table := range f.o.Tables {
		if strings.Contains(q, strings.ToUpper(table)) {
			return true
		}
	}
	return false
}

// changes turns one rows event of a mapped table into changes, one per
// tenant.
func (f *Feed) changes(ctx context.Context, table string, m Table, e *replication.RowsEvent, at time.Time) ([]upstream.Change, error) {
	op := map[replication.EnumRowsEventType]string{
		replication.EnumRowsEventTypeInsert: upstream.OpInsert,
		replication.EnumRowsEventTypeUpdate: upstream.OpUpdate,
		replication.EnumRowsEventTypeDelete: upstream.OpDelete,
	}[e.Type()]
	f.mu.Lock()
	cols := f.columns[table]
	f.mu.Unlock()
	col := func(name string) int {
		if name == "" {
			return -1
		}
		if i, ok := cols[strings.ToLower(name)]; ok {
			return i
		}
		return -1
	}
	idCol, tenantCol, propCol, agentCol := col(m.ID), col(m.Tenant), col(m.Property), col(m.Agent)
	type entities struct{ props, agents []int64 }
	byTenant := map[string]*entities{}
	add := func(tenant string, prop, agent int64) {
		e := byTenant[tenant]
		if e == nil {
			e = &entities{}
			byTenant[tenant] = e
		}
		if prop > 0 {
			e.props = append(e.props, prop)
		}
		if agent > 0 {
			e.agents = append(e.agents, agent)
		}
	}
	var orphans []int64 // property ids whose tenant is looked up
	var orphanAgents = map[int64][]int64{}
	for _, row := range e.Rows {
		switch {
		case idCol >= 0 && tenantCol >= 0:
			id, tid := intAt(row, idCol), intAt(row, tenantCol)
			tenant := f.tenantName(ctx, tid)
			if m.Resource == upstream.ResourceAgents {
				add(tenant, 0, id)
			} else {
				add(tenant, id, 0)
			}
		case propCol >= 0:
			pid := intAt(row, propCol)
			orphans = append(orphans, pid)
			if agentCol >= 0 {
				orphanAgents[pid] = append(orphanAgents[pid], intAt(row, agentCol))
			}
		default:
			// A mapped table whose columns are not there: say so once per
			// event and purge every tenant's resource.
			f.log.Warn("binlog: a mapped table lacks its columns", "table", table)
			return []upstream.Change{{Tenant: upstream.AllTenants, Resource: m.Resource, Table: table, Op: op, At: at}}, nil
		}
	}
	if len(orphans) > 0 {
		owners, err := f.propertyTenants(ctx, orphans)
		if err != nil {
			return nil, err
		}
		for _, pid := range orphans {
			tenant, ok := owners[pid]
			if !ok {
				// The property is gone (deleted in the same transaction):
				// its own delete names its tenant; the part's purge goes to
				// every tenant, where only the owner holds its tag.
				tenant = upstream.AllTenants
			}
			add(tenant, pid, 0)
			for _, aid := range orphanAgents[pid] {
				add(tenant, 0, aid)
			}
		}
	}
	out := make([]upstream.Change, 0, len(byTenant))
	for _, tenant := range slices.Sorted(maps.Keys(byTenant)) {
		en := byTenant[tenant]
		slices.Sort(en.props)
		slices.Sort(en.agents)
		out = append(out, upstream.Change{Tenant: tenant, Resource: m.Resource, Table: table, Op: op,
			Properties: slices.Compact(en.props), Agents: slices.Compact(en.agents), At: at})
	}
	return out, nil
}

// tenantName is the name of tenants.id id, read again once when unknown
// (a tenant added since); AllTenants when it stays unknown.
func (f *Feed) tenantName(ctx context.Context, id int64) string {
	f.mu.Lock()
	name, ok := f.tenantNames[id]
	f.mu.Unlock()
	if ok {
		return name
	}
	if err := f.loadTenants(ctx); err == nil {
		f.mu.Lock()
		name, ok = f.tenantNames[id]
		f.mu.Unlock()
		if ok {
			return name
		}
	}
	return upstream.AllTenants
}

// propertyTenants returns the tenant of each of ids that still exists.
func (f *Feed) propertyTenants(ctx context.Context, ids []int64) (map[int64]string, error) {
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	args := make([]any, len(ids))
	marks := make([]string, len(ids))
	for i, id := range ids {
		args[i], marks[i] = id, "?"
	}
	rows, err := f.db.QueryContext(ctx, "SELECT p.id, t.name FROM properties p JOIN tenants t ON t.id = p.tenant_id WHERE p.id IN ("+strings.Join(marks, ",")+")", args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64]string{}
	for rows.Next() {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			return nil, err
		}
		out[id] = name
	}
	return out, rows.Err()
}

// intAt reads column i of a row event's row as an integer; 0 when it is
// not one.
func intAt(row []any, i int) int64 {
	if i < 0 || i >= len(row) {
		return 0
	}
	switch v := row[i].(type) {
	case int8:
		return int64(v)
	case int16:
		return int64(v)
	case int32:
		return int64(v)
	case int64:
		return v
	case int:
		return int64(v)
	case uint8:
		return int64(v)
	case uint16:
		return int64(v)
	case uint32:
		return int64(v)
	case uint64:
		return int64(v)
	case string:
		n, _ := strconv.ParseInt(v, 10, 64)
		return n
	case []byte:
		n, _ := strconv.ParseInt(string(v), 10, 64)
		return n
	}
	return 0
}
