package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"listingproxy/internal/testkit"
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
// waits until the server has let those go. It waits on the killed pids, not
// on the application name: the pool may open a new connection meanwhile
// (database/sql's opener serves a request queued behind a dead connection in
// the background, and its connection can arrive after the request was
// served elsewhere), and that one is alive, not a connection left over.
func terminate(t *testing.T, admin *sql.DB, app string) {
	t.Helper()
	ctx := context.Background()
	var killed []int32 // pg_stat_activity.pid is an integer
	rows, err := admin.QueryContext(ctx, "SELECT pid FROM pg_stat_activity WHERE application_name = $1", app)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var pid int32
		if err := rows.Scan(&pid); err != nil {
			t.Fatal(err)
		}
		killed = append(killed, pid)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(killed) == 0 {
		t.Fatal("no connection of the store to terminate")
	}
	// Two statements, not one with pg_terminate_backend in the WHERE: the
	// planner may evaluate the call before the name test, on every backend.
	if _, err := admin.ExecContext(ctx, "SELECT pg_terminate_backend(p) FROM unnest($1::int[]) AS p", killed); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute) // a bound on a condition, not a pause
	for {
		var left int
		if err := admin.QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1::int[])", killed).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of the %d terminated connections (pids %v) never went away", left, len(killed), killed)
		}
		time.Sleep(10 * time.Millisecond)
	}
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
	got := testkit.NewChanges()
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	feed := st.NotifyFeed()
	go func() { done <- feed.Watch(lctx, got) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Watch returned %v after its context ended, want nil", err)
		}
	}()
	type Change = upstream.Change
	expect := func(what string, want Change) {
		t.Helper()
		if diff := cmp.Diff(want, got.Next(t), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", what, diff)
		}
	}
	expect("connect", Change{Tenant: upstream.AllTenants, Gap: true})
	// The feed reports itself up after the gap: wait for it, do not race it.
	testkit.WaitFor(t, "the feed to report itself up after connecting", func() bool {
		ups, last := got.State()
		return last == nil && ups >= 1
	})

	// Writes come from another client whose search_path does not hold the
	// tables, as a legacy application's might: "§" is the schema.
	exec := func(stmt string, args ...any) {
		t.Helper()
		if _, err := admin.ExecContext(ctx, strings.ReplaceAll(stmt, "§", app+"."), args...); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(query string) []int64 {
		t.Helper()
		rows, err := st.db.QueryContext(ctx, query)
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
	// Summit's first property and harbour's first agent (ids are global).
	summitProp := ids("SELECT min(p.id) FROM properties p JOIN tenants t ON t.id = p.tenant_id WHERE t.name = 'summit'")[0]
	harbourAgent := ids("SELECT min(a.id) FROM agents a JOIN tenants t ON t.id = a.tenant_id WHERE t.name = 'harbour'")[0]
	harbourProps := ids("SELECT p.id FROM properties p JOIN tenants t ON t.id = p.tenant_id WHERE t.name = 'harbour' ORDER BY p.id")
	link := ids("SELECT pa.property_id FROM property_agents pa JOIN properties p ON p.id = pa.property_id JOIN tenants t ON t.id = p.tenant_id WHERE t.name = 'harbour' ORDER BY 1 LIMIT 1")
	harbourProp := link[0]
	linked := ids("SELECT min(agent_id) FROM property_agents WHERE property_id = " + strconv.FormatInt(harbourProp, 10))[0]

	exec("UPDATE §properties SET price_text = 'Offers over $1' WHERE id = $1", summitProp)
	expect("update a summit property", Change{Tenant: "summit", Resource: "properties", Table: "properties", Op: "UPDATE", Properties: []int64{summitProp}})
	exec("UPDATE §agents SET phone = '+61 2 0000 0000' WHERE id = $1", harbourAgent)
	expect("update a harbour agent", Change{Tenant: "harbour", Resource: "agents", Table: "agents", Op: "UPDATE", Agents: []int64{harbourAgent}})
	exec("INSERT INTO §property_media (property_id, kind, url, position) VALUES ($1, 'floorplan', 'https://x.example/p.png', 99)", summitProp)
	expect("add media to a summit property", Change{Tenant: "summit", Resource: "properties", Table: "property_media", Op: "INSERT", Properties: []int64{summitProp}})
	// An agent link changes both documents.
	exec("DELETE FROM §property_agents WHERE property_id = $1 AND agent_id = $2", harbourProp, linked)
	exec("INSERT INTO §property_agents (property_id, agent_id, position) VALUES ($1, $2, 9)", harbourProp, linked)
	expect("unlink an agent", Change{Tenant: "harbour", Resource: "properties", Table: "property_agents", Op: "DELETE", Properties: []int64{harbourProp}, Agents: []int64{linked}})
	expect("link an agent", Change{Tenant: "harbour", Resource: "properties", Table: "property_agents", Op: "INSERT", Properties: []int64{harbourProp}, Agents: []int64{linked}})
	exec("DELETE FROM §openhomes WHERE property_id = -1") // no rows: no notification
	// One statement changing many rows of one tenant: one notification
	// naming them all.
	exec("UPDATE §properties SET featured = NOT featured WHERE tenant_id = (SELECT id FROM §tenants WHERE name = 'harbour')")
	expect("update every harbour property", Change{Tenant: "harbour", Resource: "properties", Table: "properties", Op: "UPDATE", Properties: harbourProps})
	// More than 300 entities: the notification names none (the tenant).
	exec(`INSERT INTO §properties (id, tenant_id, country, agency_id, last_updated, status, latitude, longitude, category)
		SELECT 900000 + g, (SELECT id FROM §tenants WHERE name = 'summit'), 'au', 'bulk' || g, now(), 'CURRENT', -33.8, 151.2, 'Residential'
		FROM generate_series(1, 301) g`)
	expect("a bulk import", Change{Tenant: "summit", Resource: "properties", Table: "properties", Op: "INSERT"})
	exec("UPDATE §agents SET phone = phone WHERE id = $1", harbourAgent)
	expect("the next change after a bulk import", Change{Tenant: "harbour", Resource: "agents", Table: "agents", Op: "UPDATE", Agents: []int64{harbourAgent}})

	terminate(t, admin, app)
	expect("reconnect", Change{Tenant: upstream.AllTenants, Gap: true})
	exec("UPDATE §agents SET phone = phone WHERE id = $1", harbourAgent)
	expect("after reconnecting", Change{Tenant: "harbour", Resource: "agents", Table: "agents", Op: "UPDATE", Agents: []int64{harbourAgent}})
}

func TestNotifyNeedsPostgres(t *testing.T) {
	st := openSQLite(t)
	if err := st.InstallNotify(context.Background()); !errors.Is(err, ErrNotifyUnsupported) {
		t.Errorf("InstallNotify on SQLite = %v, want ErrNotifyUnsupported", err)
	}
	if err := st.NotifyFeed().Watch(context.Background(), testkit.NewChanges()); !errors.Is(err, ErrNotifyUnsupported) {
		t.Errorf("the notify feed's Watch on SQLite = %v, want ErrNotifyUnsupported", err)
	}
}
