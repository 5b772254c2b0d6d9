package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"modernc.org/sqlite"

	"listingproxy/upstream/sqlstore/demo"
)

// SeedDemo writes the demo data of o (see package demo) into an empty store,
// in one transaction: either all of it is there afterwards or none. A zero
// o.Now is the store's Now. It returns ErrNotEmpty when the store already
// holds data. It is Seed without progress reports.
func (s *Store) SeedDemo(ctx context.Context, o demo.Options) error {
	return s.Seed(ctx, o, SeedOptions{})
}

// SetupDemo prepares the demo's own database (a Config.Setup): it creates
// the schema and loads the demo data of o into an empty database, and
// with notify installs the change-notification trigger (idempotent; a
// legacy database's operator installs it, README). Another process that
// seeded the same database first is no error.
func (s *Store) SetupDemo(ctx context.Context, o demo.Options, notify bool) error {
	if err := s.Migrate(ctx); err != nil {
		return err
	}
	empty, err := s.Empty(ctx)
	if err != nil {
		return err
	}
	if empty {
		start := time.Now()
		switch err := s.SeedDemo(ctx, o); {
		case errors.Is(err, ErrNotEmpty):
			s.log.Info("demo data seeded by another process")
		case err != nil:
			return fmt.Errorf("seed demo data: %w", err)
		default:
			s.log.Info("seeded demo data", "took", time.Since(start).Round(time.Millisecond).String())
		}
	}
	if notify {
		if err := s.InstallNotify(ctx); err != nil {
			return err
		}
	}
	return nil
}

// LoadOptions are Load's: the demo data, whether to reset first, and
// Seed's options.
type LoadOptions struct {
	Demo demo.Options
	// Reset drops and recreates the demo's tables before the load (Reset:
	// refused when the database holds tenants other than the demo's).
	Reset bool
	SeedOptions
}

// Load is "listingproxy seed": it opens the database of dialect at dsn for
// one bulk load (two connections and no per-statement timeout: the load is
// one long transaction), creates the schema where missing, with o.Reset
// resets it, and seeds o.Demo (ErrNotEmpty when the database already holds
// data).
func Load(ctx context.Context, dialect, dsn string, o LoadOptions) error {
	st, err := Open(ctx, Config{Dialect: dialect, DSN: dsn, Now: func() time.Time { return o.Demo.Now }, MaxOpenConns: 2})
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return err
	}
	if o.Reset {
		if err := st.Reset(ctx); err != nil {
			return err
		}
	}
	return st.Seed(ctx, o.Demo, o.SeedOptions)
}

// SeedOptions tunes Seed. The zero value works.
type SeedOptions struct {
	// Progress, when set, is called after each batch with the number of
	// properties written so far and the number Seed will write.
	Progress func(done, total int)
}

// Seed streams the demo data of o into an empty store in bulk, in one
// transaction, then analyzes the tables: COPY on PostgreSQL; multi-row
// INSERTs through prepared statements on MySQL (up to ~60,000 bound values
// each, below its 65,535 placeholders and far below max_allowed_packet, with
// foreign-key and unique checks off for the session, as mysqldump does: the
// generator's rows are consistent by construction) and on SQLite (100 rows
// each). Memory stays flat however large o is: rows are held one batch at a
// time. A zero o.Now is the store's Now. It returns ErrNotEmpty when the
// store already holds data.
func (s *Store) Seed(ctx context.Context, o demo.Options, so SeedOptions) (err error) {
	if o.Now.IsZero() {
		o.Now = s.now()
	}
	defer func() {
		if err != nil && !errors.Is(err, ErrNotEmpty) {
			err = fmt.Errorf("sqlstore: seed demo: %w", err)
		}
	}()
	empty, err := s.Empty(ctx)
	if err != nil {
		return err
	}
	if !empty {
		return ErrNotEmpty
	}
	return s.seedEmpty(ctx, o, so)
}

// seedEmpty is Seed once the store was found empty. Another process may
// have found it empty too (two instances of the demo started at once on
// one fresh file) and committed its seed first: ours then fails on its
// rows (a unique constraint, after waiting for its lock). A seed is one
// transaction, so a store that holds data after ours failed holds a whole
// seed: that is reported as ErrNotEmpty, not as the failure. When the
// other's seed outlasts SQLite's busy timeout (a slow machine), ours fails
// with SQLITE_BUSY while the store still looks empty: it waits for the
// lock (jittered backoff) and tries again, until the other commits or ctx
// ends.
func (s *Store) seedEmpty(ctx context.Context, o demo.Options, so SeedOptions) error {
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval, bo.MaxInterval = 100*time.Millisecond, 2*time.Second
	for {
		err := s.seedOnce(ctx, o, so)
		if err == nil || !busy(err) {
			return err
		}
		s.log.Info("sqlstore: seed demo: another process holds the database's lock; waiting", "error", err)
		t := time.NewTimer(bo.NextBackOff())
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		if empty, eerr := s.Empty(ctx); eerr == nil && !empty {
			return ErrNotEmpty
		}
	}
}

// sqliteBusy is SQLITE_BUSY, the primary result code.
const sqliteBusy = 5

// busy reports SQLite's SQLITE_BUSY (its lock held by another connection
// past the busy timeout).
func busy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqliteBusy
}

// seedOnce is one try of seedEmpty.
func (s *Store) seedOnce(ctx context.Context, o demo.Options, so SeedOptions) (err error) {
	defer func() {
		if err == nil {
			return
		}
		if empty, eerr := s.Empty(context.WithoutCancel(ctx)); eerr == nil && !empty {
			s.log.Info("sqlstore: seed demo: another process seeded the store first", "error", err)
			err = ErrNotEmpty
		}
	}()
	ctx, span := s.tracer.Start(ctx, "sql.seed", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(s.system, attribute.String("db.operation.name", "INSERT")))
	defer func() {
		if err != nil {
			span.SetStatus(codes.Error, errorKind(err))
		}
		span.End()
	}()
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	w := newSeedWriter(s.d, o.Properties(), so.Progress)
	switch s.d.(type) {
	case postgresDialect:
		err = conn.Raw(func(dc any) error {
			sc, ok := dc.(*stdlib.Conn)
			if !ok {
				return fmt.Errorf("driver connection is %T, want *stdlib.Conn", dc)
			}
			return seedCopy(ctx, sc.Conn(), o, w)
		})
	case mysqlDialect:
		err = seedInserts(ctx, conn, s.d, o, w, 60000,
			"SET SESSION foreign_key_checks = 0, unique_checks = 0",
			"SET SESSION foreign_key_checks = 1, unique_checks = 1")
	default:
		err = seedInserts(ctx, conn, s.d, o, w, 100*28, "", "")
	}
	if err != nil {
		return err
	}
	for _, stmt := range s.d.analyze() {
		if err := s.exec(ctx, stmt); err != nil {
			return fmt.Errorf("analyze: %w", err)
		}
	}
	return nil
}

// seedCopy writes the demo through COPY in one transaction of conn.
func seedCopy(ctx context.Context, conn *pgx.Conn, o demo.Options, w *seedWriter) (err error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	for _, b := range w.all() {
		b.max = 20000
	}
	w.write = func(b *batch) error {
		_, err := tx.CopyFrom(ctx, pgx.Identifier{b.table}, b.cols, &batchSource{b: b, row: -1})
		return err
	}
	if err := demo.Generate(o, w); err != nil {
		return err
	}
	if err := w.flush(); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// batchSource is a pgx.CopyFromSource over a batch's buffered rows.
type batchSource struct {
	b   *batch
	row int
}

func (s *batchSource) Next() bool { s.row++; return s.row < s.b.rows }
func (s *batchSource) Values() ([]any, error) {
	n := len(s.b.cols)
	return s.b.vals[s.row*n : (s.row+1)*n], nil
}
func (s *batchSource) Err() error { return nil }

// seedInserts writes the demo as multi-row INSERTs of at most maxValues
// bound values, in one transaction of conn. setup runs on conn before the
// transaction and teardown after it.
func seedInserts(ctx context.Context, conn *sql.Conn, d dialect, o demo.Options, w *seedWriter, maxValues int, setup, teardown string) (err error) {
	if setup != "" {
		if _, err := conn.ExecContext(ctx, setup); err != nil {
			return err
		}
		defer func() {
			if _, terr := conn.ExecContext(context.WithoutCancel(ctx), teardown); terr != nil {
				// A connection in an unknown session state must not go back
				// to the pool.
				conn.Raw(func(any) error { return driver.ErrBadConn })
				err = errors.Join(err, terr)
			}
		}()
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	stmts := map[*batch]*sql.Stmt{}
	defer func() {
		for _, st := range stmts {
			st.Close()
		}
		if err != nil {
			tx.Rollback()
		}
	}()
	for _, b := range w.all() {
		b.max = max(1, min(10000, maxValues/len(b.cols)))
	}
	w.write = func(b *batch) error {
		if b.rows < b.max {
			_, err := tx.ExecContext(ctx, b.statement(d, b.rows), b.vals...)
			return err
		}
		st := stmts[b]
		if st == nil {
			var err error
			if st, err = tx.PrepareContext(ctx, b.statement(d, b.max)); err != nil {
				return err
			}
			stmts[b] = st
		}
		_, err := st.ExecContext(ctx, b.vals...)
		return err
	}
	if err := demo.Generate(o, w); err != nil {
		return err
	}
	if err := w.flush(); err != nil {
		return err
	}
	return tx.Commit()
}

// Reset drops the schema's tables with their data and creates them again,
// for reloading the demo. It refuses (ErrNotDemo) unless every tenant in the
// database is a demo tenant, so it never wipes a real legacy database.
func (s *Store) Reset(ctx context.Context) error {
	rows, err := s.db.QueryContext(ctx, "SELECT name FROM tenants")
	if err == nil {
		defer rows.Close()
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				return fmt.Errorf("sqlstore: reset: %w", err)
			}
			if !slices.ContainsFunc(demo.Tenants, func(t demo.Tenant) bool { return t.Name == name }) {
				return fmt.Errorf("sqlstore: reset: tenant %q: %w", name, ErrNotDemo)
			}
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("sqlstore: reset: %w", err)
		}
		rows.Close()
	} // no tenants table: nothing to drop but what Migrate would create
	for _, t := range []string{"openhomes", "property_media", "property_agents", "properties", "agents", "tenants"} {
		if _, err := s.db.ExecContext(ctx, "DROP TABLE IF EXISTS "+t); err != nil {
			return fmt.Errorf("sqlstore: reset: %w", err)
		}
	}
	s.mu.Lock()
	clear(s.tenants)
	s.mu.Unlock()
	return s.Migrate(ctx)
}

// ErrNotDemo is returned by Reset when the database holds a tenant that the
// demo does not.
var ErrNotDemo = errors.New("the database holds data that is not the demo's")

// exec runs a statement and drains any result rows (ANALYZE TABLE answers
// with a result set).
func (s *Store) exec(ctx context.Context, stmt string) error {
	rows, err := s.db.QueryContext(ctx, stmt)
	if err != nil {
		return err
	}
	for rows.Next() {
	}
	return errors.Join(rows.Err(), rows.Close())
}

// batch buffers the rows of one table until max rows are buffered.
type batch struct {
	table string
	cols  []string
	max   int
	rows  int   // rows buffered
	vals  []any // rows*len(cols) values
}

func (b *batch) statement(d dialect, rows int) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "INSERT INTO %s (%s) VALUES ", b.table, strings.Join(b.cols, ", "))
	n := 0
	for r := range rows {
		if r > 0 {
			sb.WriteString(", ")
		}
		sb.WriteByte('(')
		for c := range b.cols {
			if c > 0 {
				sb.WriteString(", ")
			}
			n++
			sb.WriteString(d.placeholder(n))
		}
		sb.WriteByte(')')
	}
	return sb.String()
}

// seedWriter is the demo.Sink that buffers rows per table and hands them to
// write. Batches are written together in foreign-key order whenever one
// fills up.
type seedWriter struct {
	d        dialect
	write    func(*batch) error
	progress func(done, total int)
	pending  int // properties buffered
	done     int // properties written
	total    int

	tenants, agents, properties, propertyAgents, media, openHomes *batch
}

func newSeedWriter(d dialect, total int, progress func(done, total int)) *seedWriter {
	return &seedWriter{
		d: d, total: total, progress: progress,
		tenants: &batch{table: "tenants", cols: []string{"id", "name"}},
		agents: &batch{table: "agents", cols: []string{"id", "tenant_id", "country", "name", "username", "phone",
			"after_hours_phone", "mobile_phone", "email", "description", "photo_url", "website_url"}},
		properties: &batch{table: "properties", cols: []string{"id", "tenant_id", "country", "agency_id",
			"last_updated", "approved", "street_number", "street_name", "address_display", "status", "latitude",
			"longitude", "price_text", "price_from", "price_to", "price_type", "category", "property_type",
			"suburb", "area", "region", "bedrooms", "bathrooms", "floor_size", "lot_size", "built_in",
			"description", "featured"}},
		propertyAgents: &batch{table: "property_agents", cols: []string{"property_id", "agent_id", "position"}},
		media: &batch{table: "property_media", cols: []string{"property_id", "kind", "url", "thumbnail", "type",
			"caption", "position"}},
		openHomes: &batch{table: "openhomes", cols: []string{"property_id", "starts_at", "ends_at"}},
	}
}

func (w *seedWriter) all() []*batch {
	return []*batch{w.tenants, w.agents, w.properties, w.propertyAgents, w.media, w.openHomes}
}

func (w *seedWriter) add(b *batch, vals ...any) error {
	b.vals = append(b.vals, vals...)
	b.rows++
	if b.rows < b.max {
		return nil
	}
	return w.flush()
}

// flush writes every buffered row, parents before children, and reports
// progress.
func (w *seedWriter) flush() error {
	for _, b := range w.all() {
		if b.rows == 0 {
			continue
		}
		if err := w.write(b); err != nil {
			return fmt.Errorf("%s: %w", b.table, err)
		}
		clear(b.vals) // drop references to strings of written rows
		b.rows, b.vals = 0, b.vals[:0]
	}
	w.done += w.pending
	w.pending = 0
	if w.progress != nil {
		w.progress(w.done, w.total)
	}
	return nil
}

func (w *seedWriter) Tenant(t demo.Tenant) error { return w.add(w.tenants, t.ID, t.Name) }

func (w *seedWriter) Agent(a demo.Agent) error {
	return w.add(w.agents, a.ID, a.TenantID, a.Country, a.Name, a.Username, a.Phone, a.AfterHoursPhone,
		a.MobilePhone, a.Email, a.Description, a.PhotoURL, a.WebsiteURL)
}

func (w *seedWriter) Property(p demo.Property) error {
	var approved any
	if !p.Approved.IsZero() {
		approved = w.d.dateArg(p.Approved.UTC().Format(dateLayout))
	}
	w.pending++
	return w.add(w.properties, p.ID, p.TenantID, p.Country, p.AgencyID, w.d.timeArg(p.LastUpdated), approved,
		p.StreetNumber, p.StreetName, p.AddressDisplay, p.Status, p.Latitude, p.Longitude, p.PriceText,
		nullable(p.PriceFrom), nullable(p.PriceTo), p.PriceType, p.Category, p.PropertyType, p.Suburb, p.Area,
		p.Region, nullable(p.Bedrooms), nullable(p.Bathrooms), nullable(p.FloorSize), nullable(p.LotSize),
		p.BuiltIn, p.Description, p.Featured)
}

func (w *seedWriter) PropertyAgent(pa demo.PropertyAgent) error {
	return w.add(w.propertyAgents, pa.PropertyID, pa.AgentID, pa.Position)
}

func (w *seedWriter) Media(m demo.Media) error {
	return w.add(w.media, m.PropertyID, m.Kind, m.URL, m.Thumbnail, m.Type, m.Caption, m.Position)
}

func (w *seedWriter) OpenHome(oh demo.OpenHome) error {
	return w.add(w.openHomes, oh.PropertyID, w.d.timeArg(oh.Start), w.d.timeArg(oh.End))
}
