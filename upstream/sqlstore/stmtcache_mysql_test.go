package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/google/go-cmp/cmp"

	"listingproxy/upstream"
	"listingproxy/upstream/sqlstore/demo"
)

// seededMySQL is a MySQL/MariaDB store of cfg over a small demo.
func seededMySQL(t *testing.T, cfg Config) *Store {
	t.Helper()
	st := openMySQLWith(t, cfg)
	ctx := context.Background()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.SeedDemo(ctx, demo.Options{PropertiesPerTenantCountry: 40, AgentsPerTenantCountry: 6, Now: testNow}); err != nil {
		t.Fatal(err)
	}
	return st
}

// listShapes are list requests of many statement texts (orders, filters,
// page sizes: without JSON_TABLE, MySQL's child-table statements have one
// text per page size).
func listShapes() []string {
	var qs []string
	for _, order := range []string{"id", "price", "suburb", "bedrooms", "last_updated", "agency_id"} {
		for _, limit := range []int{3, 7, 12} {
			qs = append(qs, fmt.Sprintf("detail=full&limit=%d&order=%s", limit, order))
		}
		qs = append(qs, "status=current&limit=5&offset=2&order="+order)
	}
	return qs
}

// TestMySQLStatementCacheBound runs list requests of many statement texts
// through a store of one connection keeping two: the server must hold at
// most two of the store's prepared statements at any time (the session's
// Com_stmt_prepare minus Com_stmt_close: evicted statements are closed on
// the server), none once the store is closed, and every answer must be the
// one the store gives unprepared.
func TestMySQLStatementCacheBound(t *testing.T) {
	st := seededMySQL(t, Config{PreparedStatements: 2})
	st.db.SetMaxOpenConns(1) // after seeding, which needs more
	ctx := context.Background()
	s := upstream.Scope{Tenant: "harbour", Country: "au"}
	// The session's statements open on the server (its only connection).
	open := func() int {
		t.Helper()
		var name, prep, closed string
		if err := st.db.QueryRowContext(ctx, "SHOW SESSION STATUS LIKE 'Com_stmt_prepare'").Scan(&name, &prep); err != nil {
			t.Fatal(err)
		}
		if err := st.db.QueryRowContext(ctx, "SHOW SESSION STATUS LIKE 'Com_stmt_close'").Scan(&name, &closed); err != nil {
			t.Fatal(err)
		}
		p, _ := strconv.Atoi(prep)
		c, _ := strconv.Atoi(closed)
		return p - c
	}
	queries := listShapes()
	want := unpreparedAnswers(t, st, s, queries)
	base := open() // unprepared queries prepare and close at once: 0
	maxOpen := 0
	for round := range 2 {
		for i, q := range queries {
			got, err := st.ListProperties(ctx, s, parseProps(t, q))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want[i], got); diff != "" {
				t.Errorf("round %d, %s: differs from the unprepared answer (-want +got):\n%s", round, q, diff)
			}
			maxOpen = max(maxOpen, open()-base)
		}
	}
	if maxOpen == 0 {
		t.Errorf("no statement stayed prepared on the server: the cache is not used")
	}
	if maxOpen > 2 {
		t.Errorf("up to %d statements prepared on the server at once, want at most 2 (PreparedStatements 2 x 1 connection)", maxOpen)
	}
	if n := st.stmts.unprepared.Load(); n != 0 {
		t.Errorf("%d queries ran unprepared, want 0", n)
	}
	st.stmts.close() // as Close does; the connection is idle
	if n := open() - base; n != 0 {
		t.Errorf("%d statements still prepared on the server after the cache closed, want 0", n)
	}
}

// TestMySQLTooManyPrepared makes every prepare fail as a server at its
// max_prepared_stmt_count does (error 1461): the requests still succeed,
// unprepared, with the answers of a store without the cache, and the
// fallbacks are counted.
func TestMySQLTooManyPrepared(t *testing.T) {
	st := seededMySQL(t, Config{})
	ctx := context.Background()
	s := upstream.Scope{Tenant: "harbour", Country: "au"}
	queries := listShapes()[:6]
	want := unpreparedAnswers(t, st, s, queries)
	prepares := 0
	st.stmts.prepare = func(context.Context, string) (*sql.Stmt, error) {
		prepares++
		return nil, &mysql.MySQLError{Number: 1461, Message: "Can't create more than max_prepared_stmt_count statements (current value: 16382)"}
	}
	for i, q := range queries {
		got, err := st.ListProperties(ctx, s, parseProps(t, q))
		if err != nil {
			t.Fatalf("%s: %v, want the query run unprepared", q, err)
		}
		if diff := cmp.Diff(want[i], got); diff != "" {
			t.Errorf("%s: differs from the unprepared answer (-want +got):\n%s", q, diff)
		}
	}
	if prepares == 0 {
		t.Fatal("no prepare attempted: the store does not use the cache")
	}
	if n := st.stmts.unprepared.Load(); n != int64(prepares) {
		t.Errorf("%d queries counted unprepared, want %d (one per refused prepare)", n, prepares)
	}
	if n := len(st.stmts.texts()); n != 0 {
		t.Errorf("%d statements cached after refused prepares, want 0", n)
	}
	// Any other prepare error still fails the request.
	st.stmts.prepare = func(context.Context, string) (*sql.Stmt, error) {
		return nil, &mysql.MySQLError{Number: 1064, Message: "syntax error"}
	}
	if _, err := st.ListProperties(ctx, s, parseProps(t, queries[0])); err == nil {
		t.Error("a prepare failing with error 1064 was not reported")
	}
}

// TestMySQLGeoCandidatesUnprepared: on MySQL a deep geo page's
// geo_candidates statement runs unprepared (re-executed from the cache,
// MariaDB ran it 1.4 times slower than prepared afresh), while the search's
// other statements, geo_count first, stay in the statement cache.
func TestMySQLGeoCandidatesUnprepared(t *testing.T) {
	t.Parallel() // its own database
	st := openMySQLWith(t, Config{})
	ctx := context.Background()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	// Enough properties that the box holds more than geoWalkMax, for a page past it.
	if err := st.SeedDemo(ctx, demo.Options{PropertiesPerTenantCountry: 4 * geoWalkMax, AgentsPerTenantCountry: 4, Now: testNow}); err != nil {
		t.Fatal(err)
	}
	sc := upstream.Scope{Tenant: "harbour", Country: "au"}
	defer func(n int) { st.geoProbe = n }(st.geoProbe)
	st.geoProbe = 2 // a large box, as at a million properties
	c := parseProps(t, "geo[lat]=-33.89&geo[long]=151.27&geo[rad]=1000&offset="+strconv.Itoa(geoWalkMax)+"&limit=5&order=price")
	plan := mustExplain(t, st, sc, c)
	if !slices.Contains(statements(plan), "geo_candidates") {
		t.Fatalf("fixture: the page does not read the box with geo_candidates:\n%s", plan)
	}
	ps, err := st.ListProperties(ctx, sc, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) == 0 {
		t.Fatalf("fixture: no properties in the box at offset %d", geoWalkMax)
	}
	tenant, ok, err := st.tenantID(ctx, sc.Tenant)
	if err != nil || !ok {
		t.Fatalf("tenantID(%q) = %v, %v", sc.Tenant, ok, err)
	}
	r := requestOf(c.Property(), c)
	candidates, err := st.geoCandidatesQuery(tenant, sc.Country, r, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	count := st.geoCountQuery(tenant, sc.Country, r)
	st.stmts.mu.Lock()
	prepared := st.stmts.lru.Contains(candidates.String())
	countPrepared := st.stmts.lru.Contains(count.String())
	st.stmts.mu.Unlock()
	if prepared {
		t.Errorf("geo_candidates is in the statement cache: %s", candidates)
	}
	if !countPrepared {
		t.Errorf("geo_count is not in the statement cache (is the cache used?): %s", count)
	}
}

// TestMySQLOneTextForAnyPageSize: on MySQL/MariaDB with JSON_TABLE, a
// page's child rows (load_children) and a geo page's rows (load_properties)
// are read with the ids bound as one JSON array, so lists of every page
// size run the statement texts of one page size: after one list of each
// shape, lists of other limits add no statement to the cache (an IN list
// had one text per page size, each prepared on the server). Their answers
// are the ones the store gives unprepared.
func TestMySQLOneTextForAnyPageSize(t *testing.T) {
	st := seededMySQL(t, Config{PreparedStatements: 64})
	if !st.currentHints().jsonTable {
		t.Skip("this MySQL/MariaDB has no JSON_TABLE: IN lists are used, one text per page size")
	}
	ctx := context.Background()
	s := upstream.Scope{Tenant: "harbour", Country: "au"}
	shapes := []string{"detail=full&order=price", "order=suburb", "geo[lat]=-33.89&geo[long]=151.27&geo[rad]=50&detail=full"}
	texts := func() int {
		st.stmts.mu.Lock()
		defer st.stmts.mu.Unlock()
		return st.stmts.lru.Len()
	}
	for _, shape := range shapes {
		if _, err := st.ListProperties(ctx, s, parseProps(t, shape+"&limit=20")); err != nil {
			t.Fatal(err)
		}
	}
	before := texts()
	var queries []string
	for limit := 1; limit <= 12; limit++ {
		for _, shape := range shapes {
			queries = append(queries, fmt.Sprintf("%s&limit=%d", shape, limit))
		}
	}
	want := unpreparedAnswers(t, st, s, queries)
	for i, q := range queries {
		got, err := st.ListProperties(ctx, s, parseProps(t, q))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want[i], got); diff != "" {
			t.Errorf("%s: differs from the unprepared answer (-want +got):\n%s", q, diff)
		}
	}
	if after := texts(); after != before {
		st.stmts.mu.Lock()
		all := st.stmts.lru.Keys()
		st.stmts.mu.Unlock()
		slices.Sort(all)
		t.Errorf("lists of limits 1-12 added %d statement texts to the %d of limit 20, want none:\n%s", after-before, before, strings.Join(all, "\n"))
	}
}
