package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	gocmp "github.com/google/go-cmp/cmp"

	"listingproxy/upstream"
)

// openMySQL opens a store on a fresh database of the MySQL or MariaDB server
// named by LISTINGPROXY_TEST_MYSQL_DSN, dropped when the test ends.
func openMySQL(t *testing.T) *Store {
	t.Helper()
	return openMySQLWith(t, Config{})
}

// openMySQLWith is openMySQL with cfg's settings (its Dialect, DSN and Now
// are set here).
func openMySQLWith(t *testing.T, cfg Config) *Store {
	t.Helper()
	dsn := os.Getenv("LISTINGPROXY_TEST_MYSQL_DSN")
	if dsn == "" {
		t.Skip("LISTINGPROXY_TEST_MYSQL_DSN is not set; set it to run the MySQL/MariaDB tests, " +
			"e.g. root@tcp(127.0.0.1:3306)/test?parseTime=true&multiStatements=true")
	}
	ctx := context.Background()
	admin, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	name := fmt.Sprintf("listingproxy_test_%d_%d", os.Getpid(), time.Now().UnixNano())
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name+" CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := admin.ExecContext(context.Background(), "DROP DATABASE "+name); err != nil {
			t.Errorf("drop test database: %v", err)
		}
	})
	mc, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	mc.DBName = name
	cfg.Dialect, cfg.DSN, cfg.Now = "mysql", mc.FormatDSN(), func() time.Time { return testNow }
	st, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestMySQLBackend(t *testing.T) {
	t.Parallel() // its own database
	testEngine(t, openMySQL(t))
}

// TestMySQLIndexUpgrade checks that Migrate brings a properties table
// created before the _ll indexes to the schema's: each order column's
// index holds id, latitude and longitude, and the index it replaces is
// gone; on a fresh database the schema file and mysqlOrderIndexColumns
// agree.
func TestMySQLIndexUpgrade(t *testing.T) {
	st := openMySQL(t)
	ctx := context.Background()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, c := range mysqlOrderIndexColumns {
		cols := "tenant_id,country," + c + ",id,latitude,longitude"
		if c == "id" {
			cols = "tenant_id,country,id,latitude,longitude"
		}
		want["properties_tc_"+c+"_ll"] = cols
	}
	indexes := func() map[string]string {
		t.Helper()
		rows, err := st.db.QueryContext(ctx, "SELECT INDEX_NAME, GROUP_CONCAT(COLUMN_NAME ORDER BY SEQ_IN_INDEX) FROM information_schema.STATISTICS "+
			"WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'properties' AND INDEX_NAME LIKE 'properties\\_tc\\_%' GROUP BY INDEX_NAME")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		got := map[string]string{}
		for rows.Next() {
			var name, cols string
			if err := rows.Scan(&name, &cols); err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(name, "_ll") || slices.Contains(mysqlOrderIndexColumns, strings.TrimPrefix(name, "properties_tc_")) {
				got[name] = cols
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if diff := gocmp.Diff(want, indexes()); diff != "" {
		t.Fatalf("fresh database: order indexes (-want +got):\n%s", diff)
	}
	// As created before: the order indexes without id, latitude, longitude.
	var clauses []string
	for _, c := range []string{"id", "status", "last_updated"} {
		clauses = append(clauses, "DROP KEY properties_tc_"+c+"_ll", "ADD KEY properties_tc_"+c+" (tenant_id, country, "+c+")")
	}
	if _, err := st.db.ExecContext(ctx, "ALTER TABLE properties "+strings.Join(clauses, ", ")); err != nil {
		t.Fatal(err)
	}
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if diff := gocmp.Diff(want, indexes()); diff != "" {
		t.Errorf("after Migrate: order indexes (-want +got):\n%s", diff)
	}
	if err := st.Migrate(ctx); err != nil { // idempotent
		t.Fatal(err)
	}
}

// TestMySQLAgentTextFilterPlans: an agent list filtered by name or
// username reads the scope from the index of that column alone (a deferred
// join, the index forced; the filter tested on its entries: "Using index",
// or "Using index condition" when the order needs another column) and the
// page's rows by primary key; by id it
// keeps the primary key. A table without those indexes (a legacy one, or
// after they are dropped) gets the plain statement, and the same answers.
func TestMySQLAgentTextFilterPlans(t *testing.T) {
	st := seededMySQL(t, Config{})
	ctx := context.Background()
	sc := upstream.Scope{Tenant: "harbour", Country: "au"}
	queries := []string{"name=smith", "name=a&order=username&limit=3&offset=2", "username=JANE.SMITH&order=name"}
	want := map[string][]int64{}
	for _, q := range queries {
		c := parseAgents(t, q)
		plan := mustExplain(t, st, sc, c)
		index := "agents_tc_name"
		if strings.HasPrefix(q, "username") {
			index = "agents_tc_username"
		}
		if !strings.Contains(plan, "<derived2>") || !regexp.MustCompile(`select_type: DERIVED, table: a, .* key: `+index+`, .*Extra: .*Using index`).MatchString(plan) {
			t.Errorf("%s: want a deferred join over %s alone (Using index), got\n%s", q, index, plan)
		}
		if p := st.PlanProblems(plan); len(p) > 0 {
			t.Errorf("%s: problems %q in\n%s", q, p, plan)
		}
		as, err := st.ListAgents(ctx, sc, c)
		if err != nil {
			t.Fatal(err)
		}
		want[q] = ids(as)
	}
	if len(want["name=smith"]) == 0 || len(want["username=JANE.SMITH&order=name"]) != 1 {
		t.Fatalf("fixture: name=smith found %v, username found %v; want some and one", want["name=smith"], want["username=JANE.SMITH&order=name"])
	}
	if plan := mustExplain(t, st, sc, parseAgents(t, "id=1&name=smith")); strings.Contains(plan, "<derived") {
		t.Errorf("by id: want the primary key, no deferred join, got\n%s", plan)
	}

	if _, err := st.db.ExecContext(ctx, "ALTER TABLE agents DROP KEY agents_tc_name, DROP KEY agents_tc_username"); err != nil {
		t.Fatal(err)
	}
	if err := st.detectHints(ctx); err != nil {
		t.Fatal(err)
	}
	for _, q := range queries {
		c := parseAgents(t, q)
		if plan := mustExplain(t, st, sc, c); strings.Contains(plan, "<derived") {
			t.Errorf("%s without the indexes: want the plain statement, got\n%s", q, plan)
		}
		as, err := st.ListAgents(ctx, sc, c)
		if err != nil {
			t.Fatalf("%s without the indexes: %v", q, err)
		}
		if diff := gocmp.Diff(want[q], ids(as)); diff != "" {
			t.Errorf("%s without the indexes: ids (-with +without):\n%s", q, diff)
		}
	}
}

// TestMySQLAgentWalkHints: with many agent ids (the scope's agents first,
// scopeFirstIDs) on MySQL tables, scope_agents reads agents_tc_id, the
// links are read through JSON_TABLE, and the dense walk whose only filter
// is the agent ids walks its order's index, forced; with another filter or
// an order of two fields the walk is left to the planner (which index is
// forced for which request is TestPageFromHints'; here the plans and pages,
// which a small table cannot tell forced from chosen). Without those
// indexes, or without JSON_TABLE (MariaDB 10.5), the plain statements give
// the same answers.
func TestMySQLAgentWalkHints(t *testing.T) {
	st := seededMySQL(t, Config{})
	ctx := context.Background()
	sc := upstream.Scope{Tenant: "harbour", Country: "au"}
	as, err := st.ListAgents(ctx, sc, parseAgents(t, "limit=100"))
	if err != nil {
		t.Fatal(err)
	}
	var own []string
	for _, a := range as {
		own = append(own, "agent_id[]="+itoa(a.ID))
	}
	if len(own) < 2 {
		t.Fatalf("fixture: %d agents in scope, want several", len(own))
	}
	list := strings.Join(own, "&")
	defer func(n, m int) { st.scopeFirstN, st.maxLinked = n, m }(st.scopeFirstN, st.maxLinked)
	st.scopeFirstN, st.maxLinked = 1, 2 // dense, as 500 agents at a million properties

	cases := []struct {
		query string
		walk  string // the index the walk forces, or "" for none
	}{
		{list + "&limit=5", "properties_tc_id_ll"},
		{list + "&limit=5&order=price", "properties_tc_price_from_ll"},
		{list + "&limit=4&offset=3&order=suburb", "properties_tc_suburb_ll"},
		{list + "&limit=5&status=current", ""},
		{list + "&limit=5&order[]=price&order[]=bedrooms", ""},
	}
	want := map[string][]int64{}
	for _, tc := range cases {
		c := parseProps(t, tc.query)
		plan := mustExplain(t, st, sc, c)
		if !strings.Contains(plan, denseAgentsNote) {
			t.Fatalf("%s: not the dense walk:\n%s", tc.query, plan)
		}
		if tc.walk != "" && !regexp.MustCompile(`table: p, .* key: `+tc.walk+`,`).MatchString(plan) {
			t.Errorf("%s: walk not over %s:\n%s", tc.query, tc.walk, plan)
		}
		if !regexp.MustCompile(`table: a, .* key: agents_tc_id,`).MatchString(plan) {
			t.Errorf("%s: scope_agents not over agents_tc_id:\n%s", tc.query, plan)
		}
		if !strings.Contains(plan, "json_table") {
			t.Errorf("%s: links not read through JSON_TABLE:\n%s", tc.query, plan)
		}
		ps, err := st.ListProperties(ctx, sc, c)
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) == 0 {
			t.Fatalf("%s: fixture: no properties", tc.query)
		}
		want[tc.query] = ids(ps)
	}

	// Without the indexes and JSON_TABLE: the plain statements, the same pages.
	if _, err := st.db.ExecContext(ctx, "ALTER TABLE agents DROP KEY agents_tc_id"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.db.ExecContext(ctx, "ALTER TABLE properties DROP KEY properties_tc_price_from_ll, DROP KEY properties_tc_suburb_ll"); err != nil {
		t.Fatal(err)
	}
	if err := st.detectHints(ctx); err != nil {
		t.Fatal(err)
	}
	st.mu.Lock()
	st.hints.jsonTable = false
	st.mu.Unlock()
	for _, tc := range cases {
		c := parseProps(t, tc.query)
		plan := mustExplain(t, st, sc, c)
		if strings.Contains(plan, "agents_tc_id") || strings.Contains(plan, "json_table") ||
			strings.Contains(plan, "properties_tc_price_from_ll") || strings.Contains(plan, "properties_tc_suburb_ll") {
			t.Errorf("%s without the indexes and JSON_TABLE: still used in\n%s", tc.query, plan)
		}
		ps, err := st.ListProperties(ctx, sc, c)
		if err != nil {
			t.Fatalf("%s without the indexes: %v", tc.query, err)
		}
		if diff := gocmp.Diff(want[tc.query], ids(ps)); diff != "" {
			t.Errorf("%s without the indexes: ids (-with +without):\n%s", tc.query, diff)
		}
	}
}

// TestPageFromHints: the FROM item of the page statement by request, with
// MySQL's hints as detectHints finds them on schema/mysql.sql's tables and
// without any (another engine, or a view): the order's index is forced only
// for the dense agent walk whose only filter is the agent ids, in one order
// field.
func TestPageFromHints(t *testing.T) {
	order := map[string]string{}
	for field, c := range propertyOrder {
		order[field] = "properties_tc_" + strings.TrimPrefix(c.expr, "p.") + "_ll"
	}
	mysql := hints{fromProperties: "properties p IGNORE INDEX FOR ORDER BY (PRIMARY)", order: order}
	plain := hints{fromProperties: "properties p"}
	req := func(query string, linked ...int64) propertyRequest {
		r := requestOf(parseProps(t, query).Property(), parseProps(t, query))
		r.linked = linked
		return r
	}
	for _, tc := range []struct {
		name  string
		r     propertyRequest
		mysql string
	}{
		{"no agents", req("status=current"), mysql.fromProperties},
		{"looked up", req("agent_id[]=4", 7, 8), "properties p FORCE INDEX (PRIMARY)"},
		{"walk by id", req("agent_id[]=4&agent_id[]=9"), "properties p FORCE INDEX (properties_tc_id_ll)"},
		{"walk by price, deep", req("agent_id[]=4&agent_id[]=9&order=price&offset=300"), "properties p FORCE INDEX (properties_tc_price_from_ll)"},
		{"walk by suburb then id", req("agent_id[]=4&order[]=suburb&order[]=id"), "properties p FORCE INDEX (properties_tc_suburb_ll)"},
		{"walk with another filter", req("agent_id[]=4&bedrooms=3"), mysql.fromProperties},
		{"walk with featured", req("agent_id[]=4&featured=true"), mysql.fromProperties},
		{"walk in two fields", req("agent_id[]=4&order[]=price&order[]=bedrooms"), mysql.fromProperties},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Store{hints: mysql}
			if got := s.pageFrom(tc.r); got != tc.mysql {
				t.Errorf("MySQL: pageFrom = %q, want %q", got, tc.mysql)
			}
			s = &Store{hints: plain}
			if got := s.pageFrom(tc.r); got != plain.fromProperties {
				t.Errorf("without hints: pageFrom = %q, want %q", got, plain.fromProperties)
			}
		})
	}
}
