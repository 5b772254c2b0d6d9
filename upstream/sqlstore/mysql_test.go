package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	gocmp "github.com/google/go-cmp/cmp"
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
