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
