package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"listingproxy/upstream"
	"listingproxy/upstream/sqlstore/demo"
)

// seedSmall migrates st and loads a small demo.
func seedSmall(t *testing.T, st *Store) {
	t.Helper()
	ctx := context.Background()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.SeedDemo(ctx, demo.Options{PropertiesPerTenantCountry: 20, AgentsPerTenantCountry: 5, Now: testNow}); err != nil {
		t.Fatal(err)
	}
}

// terminate kills every server connection whose application_name is app and
// waits until the server has let them go.
func terminate(t *testing.T, admin *sql.DB, app string) {
	t.Helper()
	ctx := context.Background()
	var killed int
	if err := admin.QueryRowContext(ctx,
		"SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1", app).Scan(&killed); err != nil {
		t.Fatal(err)
	}
	if killed == 0 {
		t.Fatal("no connection of the store to terminate")
	}
	for range 500 {
		var left int
		if err := admin.QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", app).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("terminated connections never went away")
}

// TestPostgresPoolRecovers kills all the store's connections (as a database
// restart does) and checks that the very next requests succeed: the pool
// drops its dead connections and opens new ones by itself.
func TestPostgresPoolRecovers(t *testing.T) {
	st, admin, app := openPostgresWith(t, func(c *Config) { c.MaxOpenConns = 4; c.QueryTimeout = 10 * time.Second })
	seedSmall(t, st)
	ctx := context.Background()
	sc := upstream.Scope{Tenant: "harbour", Country: "au"}
	c := parseProps(t, "detail=full&limit=5")

	list := func() error {
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Go(func() {
				ps, err := st.ListProperties(ctx, sc, c)
				if err == nil && len(ps) != 5 {
					err = errors.New("short page")
				}
				errs[i] = err
			})
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	if err := list(); err != nil { // fills the pool
		t.Fatal(err)
	}
	for round := range 2 {
		terminate(t, admin, app)
		if err := list(); err != nil {
			t.Fatalf("round %d: after the connections were killed: %v", round, err)
		}
	}
	if _, err := st.GetAgent(ctx, sc, 1); err != nil {
		t.Fatalf("GetAgent after recovery: %v", err)
	}
}

// TestPostgresQueryTimeout runs a statement longer than QueryTimeout: it is
// cancelled with a deadline error instead of completing, and the store keeps
// working.
func TestPostgresQueryTimeout(t *testing.T) {
	st, _, _ := openPostgresWith(t, func(c *Config) { c.QueryTimeout = 200 * time.Millisecond })
	seedSmall(t, st)
	ctx := context.Background()
	q := newQuery(st.d)
	q.add("SELECT 1 FROM pg_sleep(5)")
	err := st.each(ctx, "sleep", q, func(*sql.Rows) error { return nil })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a 5s statement under a 200ms QueryTimeout: err = %v, want context.DeadlineExceeded", err)
	}
	sc := upstream.Scope{Tenant: "harbour", Country: "au"}
	if _, err := st.ListProperties(ctx, sc, parseProps(t, "limit=3")); err != nil {
		t.Fatalf("after a timeout: %v", err)
	}

	// The caller's deadline still applies when it is the shorter one.
	short, cancel := context.WithTimeout(ctx, time.Nanosecond)
	defer cancel()
	<-short.Done()
	if _, err := st.ListProperties(short, sc, parseProps(t, "limit=3")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("with an expired request deadline: err = %v, want context.DeadlineExceeded", err)
	}
}

// TestQueryTimeoutSQLite checks that QueryTimeout bounds each statement on
// every engine: with a timeout too small for any statement, requests fail
// with a deadline error.
func TestQueryTimeoutSQLite(t *testing.T) {
	st, _ := seededSQLite(t)
	st.queryTimeout = time.Nanosecond
	sc := upstream.Scope{Tenant: "harbour", Country: "au"}
	if _, err := st.ListProperties(context.Background(), sc, parseProps(t, "limit=3")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
}

// TestPostgresNotify installs the trigger, listens, changes rows and checks
// that each change names the right tenant and resource; then kills the
// listener's connection and checks that it reconnects and says so.
func TestPostgresNotify(t *testing.T) {
	st, admin, app := openPostgresWith(t, nil)
	seedSmall(t, st)
	ctx := context.Background()
	for range 2 { // idempotent
		if err := st.InstallNotify(ctx); err != nil {
			t.Fatal(err)
		}
	}
	type change struct{ tenant, resource string }
	got := make(chan change, 100)
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- st.Listen(lctx, func(tenant, resource string) { got <- change{tenant, resource} }) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Listen returned %v after its context ended, want nil", err)
		}
	}()
	next := func() change {
		t.Helper()
		select {
		case c := <-got:
			return c
		case <-time.After(30 * time.Second):
			t.Fatal("no notification")
			return change{}
		}
	}
	expect := func(what string, want change) {
		t.Helper()
		if c := next(); c != want {
			t.Errorf("%s: got %+v, want %+v", what, c, want)
		}
	}
	expect("connect", change{AllTenants, ""})

	// Writes come from another client whose search_path does not hold the
	// tables, as a legacy application's might: "§" is the schema.
	exec := func(stmt string, args ...any) {
		t.Helper()
		if _, err := admin.ExecContext(ctx, strings.ReplaceAll(stmt, "§", app+"."), args...); err != nil {
			t.Fatal(err)
		}
	}
	// Summit's first property and harbour's first agent (ids are global).
	var summitProp, harbourAgent int64
	if err := st.db.QueryRowContext(ctx, "SELECT min(p.id) FROM properties p JOIN tenants t ON t.id = p.tenant_id WHERE t.name = 'summit'").Scan(&summitProp); err != nil {
		t.Fatal(err)
	}
	if err := st.db.QueryRowContext(ctx, "SELECT min(a.id) FROM agents a JOIN tenants t ON t.id = a.tenant_id WHERE t.name = 'harbour'").Scan(&harbourAgent); err != nil {
		t.Fatal(err)
	}

	exec("UPDATE §properties SET price_text = 'Offers over $1' WHERE id = $1", summitProp)
	expect("update a summit property", change{"summit", "properties"})
	exec("UPDATE §agents SET phone = '+61 2 0000 0000' WHERE id = $1", harbourAgent)
	expect("update a harbour agent", change{"harbour", "agents"})
	exec("INSERT INTO §property_media (property_id, kind, url, position) VALUES ($1, 'floorplan', 'https://x.example/p.png', 99)", summitProp)
	expect("add media to a summit property", change{"summit", "properties"})
	// One transaction changing many rows of one tenant: one notification.
	exec("UPDATE §properties SET featured = NOT featured WHERE tenant_id = (SELECT id FROM §tenants WHERE name = 'harbour')")
	exec("UPDATE §agents SET phone = phone WHERE id = $1", harbourAgent)
	expect("update every harbour property", change{"harbour", "properties"})
	expect("the next change after a bulk update", change{"harbour", "agents"})

	terminate(t, admin, app)
	expect("reconnect", change{AllTenants, ""})
	exec("UPDATE §agents SET phone = phone WHERE id = $1", harbourAgent)
	expect("after reconnecting", change{"harbour", "agents"})
}

func TestNotifyNeedsPostgres(t *testing.T) {
	st := openSQLite(t)
	if err := st.InstallNotify(context.Background()); !errors.Is(err, ErrNotifyUnsupported) {
		t.Errorf("InstallNotify on SQLite = %v, want ErrNotifyUnsupported", err)
	}
	if err := st.Listen(context.Background(), func(string, string) {}); !errors.Is(err, ErrNotifyUnsupported) {
		t.Errorf("Listen on SQLite = %v, want ErrNotifyUnsupported", err)
	}
}
