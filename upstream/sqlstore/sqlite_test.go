package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"listingproxy/normalize"
	"listingproxy/upstream"
	"listingproxy/upstream/sqlstore/demo"
)

// testNow is the demo's and the store's clock in tests.
var testNow = time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)

// openSQLite opens a migrated, empty SQLite store in a temporary directory.
func openSQLite(tb testing.TB) *Store {
	tb.Helper()
	st, err := Open(context.Background(), Config{
		DSN: filepath.Join(tb.TempDir(), "listings.db"),
		Now: func() time.Time { return testNow },
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	if err := st.Migrate(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return st
}

// seededSQLite returns a store holding the default demo, and that demo.
func seededSQLite(tb testing.TB) (*Store, *demo.Dataset) {
	tb.Helper()
	st := openSQLite(tb)
	o := demo.Options{Now: testNow}
	if err := st.SeedDemo(context.Background(), o); err != nil {
		tb.Fatal(err)
	}
	ds, err := demo.Collect(o)
	if err != nil {
		tb.Fatal(err)
	}
	return st, ds
}

func TestSQLiteBackend(t *testing.T) {
	t.Parallel() // its own file
	st, ds := seededSQLite(t)
	testBackendAgainstOracle(t, st, ds, testNow)
}

func TestMigrateEmptySeed(t *testing.T) {
	ctx := context.Background()
	st := openSQLite(t)
	if err := st.Migrate(ctx); err != nil {
		t.Fatalf("second Migrate: %v", err)
	}
	if empty, err := st.Empty(ctx); err != nil || !empty {
		t.Fatalf("Empty() = %v, %v; want true", empty, err)
	}
	if err := st.SeedDemo(ctx, demo.Options{PropertiesPerTenantCountry: 20, AgentsPerTenantCountry: 5}); err != nil {
		t.Fatal(err)
	}
	if empty, err := st.Empty(ctx); err != nil || empty {
		t.Fatalf("after seeding, Empty() = %v, %v; want false", empty, err)
	}
	if err := st.SeedDemo(ctx, demo.Options{}); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("second SeedDemo = %v, want ErrNotEmpty", err)
	}
	if err := st.Migrate(ctx); err != nil {
		t.Fatalf("Migrate on a seeded store: %v", err)
	}
	var n int
	if err := st.db.QueryRowContext(ctx, "SELECT count(*) FROM properties").Scan(&n); err != nil || n != 80 {
		t.Fatalf("properties = %d, %v; want 80", n, err)
	}
	var mode string
	if err := st.db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}
	var fk int
	if err := st.db.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk); err != nil || fk != 1 {
		t.Errorf("foreign_keys = %d, %v; want 1", fk, err)
	}
}

// TestSQLiteRowidChildTables checks that a database created before the
// child tables were WITHOUT ROWID (schema/sqlite.sql: property_agents,
// property_media and openhomes clustered by property) keeps its tables as
// they are through Migrate and answers as the oracle does, and that a new
// database gets the clustered tables.
func TestSQLiteRowidChildTables(t *testing.T) {
	ctx := context.Background()
	layouts := func(t *testing.T, st *Store) map[string]bool {
		t.Helper()
		clustered := map[string]bool{}
		for _, table := range []string{"property_agents", "property_media", "openhomes"} {
			var text string
			if err := st.db.QueryRowContext(ctx, "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", table).Scan(&text); err != nil {
				t.Fatal(err)
			}
			clustered[table] = strings.HasSuffix(text, "WITHOUT ROWID")
		}
		return clustered
	}
	if got := layouts(t, openSQLite(t)); !got["property_agents"] || !got["property_media"] || !got["openhomes"] {
		t.Errorf("a new database's child tables: WITHOUT ROWID %v, want all", got)
	}

	// The schema as listingproxy created it before: rowid child tables.
	text, err := schemas.ReadFile("schema/sqlite.sql")
	if err != nil {
		t.Fatal(err)
	}
	old := strings.ReplaceAll(string(text), ") WITHOUT ROWID;", ");")
	if old == string(text) {
		t.Fatal("schema/sqlite.sql has no WITHOUT ROWID table")
	}
	st, err := Open(ctx, Config{DSN: filepath.Join(t.TempDir(), "old.db"), Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, stmt := range splitStatements(old) {
		if _, err := st.db.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Migrate(ctx); err != nil {
		t.Fatalf("Migrate on a database of the rowid schema: %v", err)
	}
	if got := layouts(t, st); got["property_agents"] || got["property_media"] || got["openhomes"] {
		t.Errorf("after Migrate, an older database's child tables: WITHOUT ROWID %v, want none (left as they were)", got)
	}
	seedAgainstOracle(t, st)
}

func TestSeedIsAtomic(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	st := openSQLite(t)
	cancel()
	if err := st.SeedDemo(ctx, demo.Options{}); err == nil {
		t.Fatal("SeedDemo with a cancelled context succeeded")
	}
	if empty, err := st.Empty(context.Background()); err != nil || !empty {
		t.Fatalf("after a failed seed, Empty() = %v, %v; want true", empty, err)
	}
}

func parseProps(t *testing.T, query string) normalize.Criteria {
	t.Helper()
	q, err := url.ParseQuery(query)
	if err != nil {
		t.Fatal(err)
	}
	c, errs := normalize.ParseProperties(q, normalize.Options{})
	if errs != nil {
		t.Fatalf("ParseProperties(%q): %v", query, errs)
	}
	return c
}

func parseAgents(t *testing.T, query string) normalize.Criteria {
	t.Helper()
	q, err := url.ParseQuery(query)
	if err != nil {
		t.Fatal(err)
	}
	c, errs := normalize.ParseAgents(q, normalize.Options{})
	if errs != nil {
		t.Fatalf("ParseAgents(%q): %v", query, errs)
	}
	return c
}

// TestSQLiteScopes checks tenant and country isolation directly, beside the
// oracle: each scope sees exactly its own records.
func TestSQLiteScopes(t *testing.T) {
	st, ds := seededSQLite(t)
	ctx := context.Background()
	all := parseProps(t, "limit=1000")
	seen := map[int64]upstream.Scope{}
	tenantOf := map[int64]int64{}
	for _, p := range ds.Properties {
		tenantOf[p.ID] = p.TenantID
	}
	for _, tn := range ds.Tenants {
		for _, country := range demo.Countries {
			s := upstream.Scope{Tenant: tn.Name, Country: country}
			ps, err := st.ListProperties(ctx, s, all)
			if err != nil {
				t.Fatal(err)
			}
			if len(ps) != demo.DefaultPropertiesPerTenantCountry {
				t.Errorf("%v: %d properties, want %d", s, len(ps), demo.DefaultPropertiesPerTenantCountry)
			}
			for _, p := range ps {
				if prev, dup := seen[p.ID]; dup {
					t.Errorf("property %d seen in %v and %v", p.ID, prev, s)
				}
				seen[p.ID] = s
				if tenantOf[p.ID] != tn.ID || !strings.HasPrefix(p.AgencyID, map[string]string{"harbour": "HB-", "summit": "SM-"}[tn.Name]+strings.ToUpper(country)) {
					t.Errorf("%v sees property %d (%s) of another scope", s, p.ID, p.AgencyID)
				}
			}
		}
	}
}

// TestSQLiteOpenHomes checks that only open homes that have not ended are
// served, against the store's clock.
func TestSQLiteOpenHomes(t *testing.T) {
	st, ds := seededSQLite(t)
	ctx := context.Background()
	var past, future int64 // a property with only past open homes; one with future ones
	ended := map[int64]int{}
	ahead := map[int64]int{}
	for _, oh := range ds.OpenHomes {
		if oh.End.After(testNow) {
			ahead[oh.PropertyID]++
		} else {
			ended[oh.PropertyID]++
		}
	}
	for id := range ended {
		if ahead[id] == 0 && (past == 0 || id < past) {
			past = id
		}
	}
	for id, n := range ahead {
		if n >= 2 && ended[id] > 0 && (future == 0 || id < future) {
			future = id
		}
	}
	if past == 0 || future == 0 {
		t.Fatalf("demo lacks the properties this test needs (past %d, future %d)", past, future)
	}
	scope := func(id int64) upstream.Scope {
		for _, p := range ds.Properties {
			if p.ID == id {
				return upstream.Scope{Tenant: ds.Tenants[p.TenantID-1].Name, Country: p.Country}
			}
		}
		t.Fatalf("no property %d", id)
		return upstream.Scope{}
	}
	p, err := st.GetProperty(ctx, scope(past), past)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.OpenHomes) != 0 {
		t.Errorf("property %d: %d open homes served, want none (all ended)", past, len(p.OpenHomes))
	}
	p, err = st.GetProperty(ctx, scope(future), future)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.OpenHomes) != ahead[future] {
		t.Errorf("property %d: %d open homes served, want %d", future, len(p.OpenHomes), ahead[future])
	}
	for i, oh := range p.OpenHomes {
		if !oh.End.After(testNow) {
			t.Errorf("open home %v served though it ended before %v", oh, testNow)
		}
		if i > 0 && oh.Start.Before(p.OpenHomes[i-1].Start) {
			t.Errorf("open homes not ordered by start: %v", p.OpenHomes)
		}
	}
}

// TestSQLiteLikeEscaping checks that LIKE wildcards in a name search match
// only themselves.
func TestSQLiteLikeEscaping(t *testing.T) {
	st, _ := seededSQLite(t)
	testLikeEscaping(t, st)
}

// testLikeEscaping adds a tenant "wild" (id 99) whose agents' names hold
// LIKE wildcards and the escape character, and checks that a name search
// takes each literally. Other tenants are untouched.
func testLikeEscaping(t *testing.T, st *Store) {
	t.Helper()
	ctx := context.Background()
	q := newQuery(st.d)
	q.add("INSERT INTO tenants (id, name) VALUES (", q.arg(99), ", ", q.arg("wild"), ")")
	if _, err := st.db.ExecContext(ctx, q.String(), q.args...); err != nil {
		t.Fatal(err)
	}
	for _, a := range []struct {
		id             int64
		name, username string
	}{
		{9001, "Percy 100% Sure", "percy"},
		{9002, "Una_Score", "una"},
		{9003, `Back\Slash`, "back"},
		{9004, "Plain Names", "plain"},
	} {
		q := newQuery(st.d)
		q.add("INSERT INTO agents (id, tenant_id, country, name, username) VALUES (",
			q.arg(a.id), ", ", q.arg(99), ", ", q.arg("au"), ", ", q.arg(a.name), ", ", q.arg(a.username), ")")
		if _, err := st.db.ExecContext(ctx, q.String(), q.args...); err != nil {
			t.Fatal(err)
		}
	}
	s := upstream.Scope{Tenant: "wild", Country: "au"}
	for _, tc := range []struct {
		name string
		want []int64
	}{
		{"%", []int64{9001}},
		{"_", []int64{9002}},
		{`\`, []int64{9003}},
		{"0% s", []int64{9001}},
		{"a_s", []int64{9002}},
		{`k\s`, []int64{9003}},
		{"S", []int64{9001, 9002, 9003, 9004}},
		{"%%", nil},
		{"u_a", nil},
		{`\%`, nil},
	} {
		c := parseAgents(t, "name="+url.QueryEscape(tc.name))
		got, err := st.ListAgents(ctx, s, c)
		if err != nil {
			t.Fatal(err)
		}
		if gotIDs := ids(got); !equalIDs(gotIDs, tc.want) {
			t.Errorf("name=%q: got %v, want %v", tc.name, gotIDs, tc.want)
		}
	}
}

func equalIDs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestSQLiteCancelledContext(t *testing.T) {
	st, ds := seededSQLite(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := upstream.Scope{Tenant: "harbour", Country: "au"}
	if _, err := st.ListProperties(ctx, s, parseProps(t, "")); !errors.Is(err, context.Canceled) {
		t.Errorf("ListProperties = %v, want context.Canceled", err)
	}
	if _, err := st.ListAgents(ctx, s, parseAgents(t, "")); !errors.Is(err, context.Canceled) {
		t.Errorf("ListAgents = %v, want context.Canceled", err)
	}
	if _, err := st.GetProperty(ctx, s, ds.Properties[0].ID); !errors.Is(err, context.Canceled) {
		t.Errorf("GetProperty = %v, want context.Canceled", err)
	}
	if _, err := st.GetAgent(ctx, s, ds.Agents[0].ID); !errors.Is(err, context.Canceled) {
		t.Errorf("GetAgent = %v, want context.Canceled", err)
	}
	if err := st.Ping(ctx); err == nil {
		t.Error("Ping with a cancelled context succeeded")
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := Open(ctx, Config{Dialect: "oracle", DSN: "x"}); err == nil {
		t.Error("Open with an unknown dialect succeeded")
	}
	if _, err := Open(ctx, Config{}); err == nil {
		t.Error("Open without a DSN succeeded")
	}
}

func TestBoundingBox(t *testing.T) {
	for _, tc := range []struct {
		name            string
		g               normalize.Geo
		allLongs, wraps bool
	}{
		{"sydney", normalize.Geo{Lat: -33.87, Long: 151.21, RadiusKm: 50}, false, false},
		{"east of antimeridian", normalize.Geo{Lat: -43.95, Long: 179.5, RadiusKm: 400}, false, true},
		{"west of antimeridian", normalize.Geo{Lat: -43.95, Long: -176.56, RadiusKm: 1000}, false, true},
		{"south pole", normalize.Geo{Lat: -89.9, Long: 0, RadiusKm: 100}, true, false},
		{"north pole", normalize.Geo{Lat: 90, Long: 10, RadiusKm: 1}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := boundingBox(tc.g)
			if b.allLongs != tc.allLongs || b.wraps != tc.wraps {
				t.Fatalf("box %+v: allLongs %v wraps %v, want %v %v", b, b.allLongs, b.wraps, tc.allLongs, tc.wraps)
			}
			// Points on the circle, every 5 degrees of bearing, must be in the box.
			for bearing := 0.0; bearing < 360; bearing += 5 {
				lat, long := destination(tc.g.Lat, tc.g.Long, tc.g.RadiusKm*0.999999, bearing)
				inLat := lat >= b.minLat && lat <= b.maxLat
				inLong := b.allLongs ||
					b.wraps && (long >= b.minLong || long <= b.maxLong) ||
					!b.wraps && long >= b.minLong && long <= b.maxLong
				if !inLat || !inLong {
					t.Errorf("point (%v, %v) at bearing %v is outside %+v", lat, long, bearing, b)
				}
			}
		})
	}
}

func TestDistanceKm(t *testing.T) {
	// Sydney to Auckland is about 2,156 km on the sphere.
	if d := DistanceKm(-33.8688, 151.2093, -36.8485, 174.7633); d < 2140 || d > 2170 {
		t.Errorf("Sydney-Auckland = %v km, want about 2156", d)
	}
	// Across the antimeridian, one degree of longitude at the equator.
	if d := DistanceKm(0, 179.5, 0, -179.5); d < 111 || d > 111.4 {
		t.Errorf("across the antimeridian = %v km, want about 111.19", d)
	}
}

// destination returns the point dist km from (lat, long) along bearing
// (degrees), on the sphere of EarthRadiusKm.
func destination(lat, long, dist, bearing float64) (float64, float64) {
	const rad = math.Pi / 180
	phi, lambda, theta, delta := lat*rad, long*rad, bearing*rad, dist/EarthRadiusKm
	sin, cos, asin, atan2 := math.Sin, math.Cos, math.Asin, math.Atan2
	phi2 := asin(sin(phi)*cos(delta) + cos(phi)*sin(delta)*cos(theta))
	lambda2 := lambda + atan2(sin(theta)*sin(delta)*cos(phi), cos(delta)-sin(phi)*sin(phi2))
	long2 := lambda2 / rad
	for long2 > 180 {
		long2 -= 360
	}
	for long2 < -180 {
		long2 += 360
	}
	return phi2 / rad, long2
}

func BenchmarkSeedDemo(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		st := openSQLite(b)
		b.StartTimer()
		if err := st.SeedDemo(ctx, demo.Options{Now: testNow}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkListProperties(b *testing.B) {
	st, _ := seededSQLite(b)
	ctx := context.Background()
	q, _ := url.ParseQuery("status[]=current&status[]=contract&category=residential&order=price&limit=20&detail=full")
	c, errs := normalize.ParseProperties(q, normalize.Options{})
	if errs != nil {
		b.Fatal(errs)
	}
	s := upstream.Scope{Tenant: "harbour", Country: "au"}
	for b.Loop() {
		if _, err := st.ListProperties(ctx, s, c); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkListPropertiesGeo(b *testing.B) {
	st, _ := seededSQLite(b)
	ctx := context.Background()
	q, _ := url.ParseQuery(geoQuery(-33.8688, 151.2093, 50) + "&order=price&limit=20")
	c, errs := normalize.ParseProperties(q, normalize.Options{})
	if errs != nil {
		b.Fatal(errs)
	}
	s := upstream.Scope{Tenant: "harbour", Country: "au"}
	for b.Loop() {
		if _, err := st.ListProperties(ctx, s, c); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSQLiteConcurrentReaders runs lists from several goroutines at once;
// each must get what a lone reader gets.
func TestSQLiteConcurrentReaders(t *testing.T) {
	st, _ := seededSQLite(t)
	ctx := context.Background()
	s := upstream.Scope{Tenant: "harbour", Country: "au"}
	c := parseProps(t, "status[]=current&status[]=contract&order=price&limit=25&detail=full")
	want, err := st.ListProperties(ctx, s, c)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			for range 10 {
				got, err := st.ListProperties(ctx, s, c)
				if err == nil && !equalIDs(ids(got), ids(want)) {
					err = fmt.Errorf("got ids %v, want %v", ids(got), ids(want))
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestConcurrentSeedsOfOneFile starts several stores on one fresh SQLite
// file at once, as two instances of the demo started together do: each
// migrates and seeds after finding the store empty. Exactly one seed
// writes the data; the others report ErrNotEmpty (another process seeded
// it), never a constraint error, and the file holds one copy of the demo.
func TestConcurrentSeedsOfOneFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shared.db")
	const n = 3
	stores := make([]*Store, n)
	for i := range stores {
		st, err := Open(ctx, Config{DSN: path, Now: func() time.Time { return testNow }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		stores[i] = st
	}
	// Every store finds the file empty before any seeds: the race the
	// check alone cannot close.
	for _, st := range stores {
		if err := st.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		if empty, err := st.Empty(ctx); err != nil || !empty {
			t.Fatalf("Empty = %v, %v before seeding", empty, err)
		}
	}
	errs := make(chan error, n)
	start := make(chan struct{})
	for _, st := range stores {
		go func() {
			<-start
			errs <- st.seedEmpty(ctx, demo.Options{Now: testNow}, SeedOptions{})
		}()
	}
	close(start)
	seeded := 0
	for range n {
		switch err := <-errs; {
		case err == nil:
			seeded++
		case errors.Is(err, ErrNotEmpty):
		default:
			t.Errorf("a concurrent seed failed: %v", err)
		}
	}
	if seeded != 1 {
		t.Errorf("%d seeds wrote data, want exactly 1", seeded)
	}
	ds, err := demo.Collect(demo.Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	var got int
	if err := stores[0].db.QueryRowContext(ctx, "SELECT count(*) FROM properties").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != len(ds.Properties) {
		t.Errorf("%d properties in the file, want %d (one copy of the demo)", got, len(ds.Properties))
	}
}

// TestSetupDemo: the demo's setup creates the schema and seeds an empty
// database, and on a database already seeded (another process first, or a
// restart) changes nothing and fails nothing.
func TestSetupDemo(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, Config{
		DSN: filepath.Join(t.TempDir(), "listings.db"),
		Now: func() time.Time { return testNow },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	o := demo.Options{Now: testNow}
	if err := st.SetupDemo(ctx, o, false); err != nil {
		t.Fatal(err)
	}
	if empty, err := st.Empty(ctx); err != nil || empty {
		t.Fatalf("after SetupDemo: empty %v, %v; want the demo", empty, err)
	}
	if err := st.SetupDemo(ctx, o, false); err != nil {
		t.Errorf("SetupDemo of a seeded database: %v", err)
	}
	ds, err := demo.Collect(o)
	if err != nil {
		t.Fatal(err)
	}
	testBackendAgainstOracle(t, st, ds, testNow)
}

// TestLoad: "listingproxy seed"'s load creates the schema of a new file
// and seeds it, refuses a second load (ErrNotEmpty) and leaves the data,
// and with Reset loads it again (one copy), reporting progress.
func TestLoad(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "seed.db")
	o := demo.Options{PropertiesPerTenantCountry: 5, AgentsPerTenantCountry: 5, Now: testNow}
	count := func() int {
		t.Helper()
		st, err := Open(ctx, Config{DSN: path, Now: func() time.Time { return testNow }})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		var n int
		if err := st.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM properties").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	var reports int
	if err := Load(ctx, "sqlite", path, LoadOptions{Demo: o, SeedOptions: SeedOptions{Progress: func(_, _ int) { reports++ }}}); err != nil {
		t.Fatalf("first load: %v", err)
	}
	if n := count(); n != o.Properties() || reports == 0 {
		t.Fatalf("after the first load: %d properties, %d progress reports; want %d, some", n, reports, o.Properties())
	}
	if err := Load(ctx, "sqlite", path, LoadOptions{Demo: o}); !errors.Is(err, ErrNotEmpty) {
		t.Errorf("second load = %v, want ErrNotEmpty", err)
	}
	if err := Load(ctx, "sqlite", path, LoadOptions{Demo: o, Reset: true}); err != nil {
		t.Fatalf("load with Reset: %v", err)
	}
	if n := count(); n != o.Properties() {
		t.Errorf("after Reset and load: %d properties, want %d", n, o.Properties())
	}
}
