package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// openMySQL opens a store on a fresh database of the MySQL or MariaDB server
// named by LISTINGPROXY_TEST_MYSQL_DSN, dropped when the test ends.
func openMySQL(t *testing.T) *Store {
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
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DBName = name
	st, err := Open(ctx, Config{Dialect: "mysql", DSN: cfg.FormatDSN(), Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestMySQLBackend(t *testing.T) {
	testEngine(t, openMySQL(t))
}
