package binlog_test

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"listingproxy/internal/testkit"
	"listingproxy/upstream"
	"listingproxy/upstream/binlog"
	"listingproxy/upstream/sqlstore"
	"listingproxy/upstream/sqlstore/demo"
)

var now = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

// source starts a MariaDB of the test's own with its binary log, creates
// the legacy schema with a small demo in database app, and returns the
// store, a root connection to app and the DSN.
func source(t *testing.T, root, name string) (*sqlstore.Store, *sql.DB, string) {
	t.Helper()
	ctx := context.Background()
	admin, err := sql.Open("mysql", root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	dsn := strings.TrimSuffix(root, "/") + "/" + name + "?parseTime=true&multiStatements=true"
	st, err := sqlstore.Open(ctx, sqlstore.Config{Dialect: "mysql", DSN: dsn, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.SeedDemo(ctx, demo.Options{PropertiesPerTenantCountry: 20, AgentsPerTenantCountry: 5, Now: now}); err != nil {
		t.Fatal(err)
	}
	app, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close() })
	return st, app, dsn
}

// TestBinlog runs the binlog feed's tests on one MariaDB of their own (it
// takes seconds to start), each in its own database.
func TestBinlog(t *testing.T) {
	root, _ := testkit.BinlogMariaDB(t)
	t.Run("RowChanges", func(t *testing.T) { testRowChanges(t, root) })
	t.Run("RefusedLogin", func(t *testing.T) { testRefusedLogin(t, root) })
	t.Run("ChecksTheSource", func(t *testing.T) { testChecksTheSource(t, root) }) // last: it changes binlog_format
}

func watch(t *testing.T, st *sqlstore.Store) *testkit.Changes {
	t.Helper()
	db, dsn := st.Source()
	f, err := binlog.New(db, dsn, nil, binlog.Options{Heartbeat: 200 * time.Millisecond, Where: "backends.main.binlog"})
	if err != nil {
		t.Fatal(err)
	}
	sink := testkit.NewChanges()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Watch(ctx, sink) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Watch = %v after its context ended, want nil", err)
		}
	})
	return sink
}

func ids(t *testing.T, db *sql.DB, q string) []int64 {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out = append(out, id)
	}
	return out
}

// testRowChanges: row changes on the legacy tables become
// changes of exactly their entities in their tenant (summit's and
// harbour's properties are told apart by their rows' tenant, parts of a
// property by the property's); a TRUNCATE concerns every tenant; killing
// the stream's connection is a gap, and the stream resumes.
func testRowChanges(t *testing.T, root string) {
	st, app, _ := source(t, root, "app")
	sink := watch(t, st)
	expect := func(what string, want upstream.Change) {
		t.Helper()
		got := sink.Next(t)
		got.At = time.Time{}
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", what, diff)
		}
	}
	expect("connect", upstream.Change{Tenant: upstream.AllTenants, Gap: true})

	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := app.Exec(q, args...); err != nil {
			t.Fatal(err)
		}
	}
	summit := ids(t, app, "SELECT p.id FROM properties p JOIN tenants t ON t.id = p.tenant_id WHERE t.name = 'summit' ORDER BY p.id LIMIT 2")
	harbour := ids(t, app, "SELECT p.id FROM properties p JOIN tenants t ON t.id = p.tenant_id WHERE t.name = 'harbour' ORDER BY p.id LIMIT 1")[0]
	agent := ids(t, app, "SELECT a.id FROM agents a JOIN tenants t ON t.id = a.tenant_id WHERE t.name = 'harbour' ORDER BY a.id LIMIT 1")[0]
	exec("UPDATE properties SET price_text = 'Offers over $1' WHERE id IN (?, ?)", summit[0], summit[1])
	expect("update two summit properties", upstream.Change{Tenant: "summit", Resource: "properties", Table: "properties", Op: "UPDATE", Properties: summit})
	exec("UPDATE agents SET phone = '+61 2 0000 0000' WHERE id = ?", agent)
	expect("update a harbour agent", upstream.Change{Tenant: "harbour", Resource: "agents", Table: "agents", Op: "UPDATE", Agents: []int64{agent}})
	exec("INSERT INTO property_media (property_id, kind, url, position) VALUES (?, 'floorplan', 'https://x.example/p.png', 99)", harbour)
	expect("a harbour property's media", upstream.Change{Tenant: "harbour", Resource: "properties", Table: "property_media", Op: "INSERT", Properties: []int64{harbour}})
	linked := ids(t, app, "SELECT agent_id FROM property_agents WHERE property_id = "+itoa(harbour)+" LIMIT 1")[0]
	exec("DELETE FROM property_agents WHERE property_id = ? AND agent_id = ?", harbour, linked)
	expect("an agent link: both documents", upstream.Change{Tenant: "harbour", Resource: "properties", Table: "property_agents", Op: "DELETE", Properties: []int64{harbour}, Agents: []int64{linked}})
	exec("UPDATE tenants SET name = name") // not a mapped table
	exec("DELETE FROM openhomes WHERE property_id = -1")
	exec("INSERT INTO properties (id, tenant_id, country, agency_id, last_updated, status, latitude, longitude, category) SELECT 900001, tenant_id, country, 'NEW-1', last_updated, status, latitude, longitude, category FROM properties WHERE id = ?", summit[0])
	expect("an insert", upstream.Change{Tenant: "summit", Resource: "properties", Table: "properties", Op: "INSERT", Properties: []int64{900001}})
	exec("TRUNCATE TABLE openhomes")
	expect("a truncate", upstream.Change{Tenant: upstream.AllTenants})

	// Kill the stream's connection on the server: a gap, then changes again.
	conns := ids(t, app, "SELECT id FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'")
	if len(conns) != 1 {
		t.Fatalf("%d binlog dump connections, want 1", len(conns))
	}
	exec("KILL ?", conns[0])
	expect("after the stream was killed", upstream.Change{Tenant: upstream.AllTenants, Gap: true})
	exec("UPDATE properties SET price_text = 'Sold' WHERE id = ?", harbour)
	expect("after reconnecting", upstream.Change{Tenant: "harbour", Resource: "properties", Table: "properties", Op: "UPDATE", Properties: []int64{harbour}})
	if _, last := sink.State(); last != nil {
		t.Errorf("the feed reports %v after reconnecting, want live", last)
	}
}

// testChecksTheSource: a source without what the stream needs is
// refused at once with a located error naming each missing piece.
func testChecksTheSource(t *testing.T, root string) {
	_, app, dsn := source(t, root, "app2")
	ctx := context.Background()
	for _, q := range []string{
		"CREATE USER 'reader'@'%' IDENTIFIED BY 'pw'",
		"GRANT SELECT ON app2.* TO 'reader'@'%'",
		"SET GLOBAL binlog_format = 'MIXED'",
	} {
		if _, err := app.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	rdsn := strings.Replace(dsn, "root@", "reader:pw@", 1)
	db, err := sql.Open("mysql", rdsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	f, err := binlog.New(db, rdsn, nil, binlog.Options{Where: "backends.main.binlog"})
	if err != nil {
		t.Fatal(err)
	}
	err = f.Watch(ctx, testkit.NewChanges())
	if err != nil && !strings.Contains(err.Error(), "binlog_format") {
		t.Fatalf("Watch = %v", err)
	}
	for _, want := range []string{"backends.main.binlog: ", "binlog_format is MIXED; the feed needs ROW", "user reader lacks REPLICATION SLAVE", "user reader lacks REPLICATION CLIENT"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Watch = %v, want an error with %q", err, want)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// testRefusedLogin: a user the server refuses (a wrong password) is a
// misconfiguration too: Watch says so at once rather than retrying.
func testRefusedLogin(t *testing.T, root string) {
	_, _, dsn := source(t, root, "app3")
	bad := strings.Replace(dsn, "root@", "root:wrong@", 1)
	db, err := sql.Open("mysql", bad)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	f, err := binlog.New(db, bad, nil, binlog.Options{Where: "backends.main.binlog"})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Watch(context.Background(), testkit.NewChanges()); err == nil || !strings.Contains(err.Error(), "backends.main.binlog: ") || !strings.Contains(err.Error(), "Access denied") {
		t.Errorf("Watch with a refused login = %v, want a located error naming the refusal", err)
	}
}
