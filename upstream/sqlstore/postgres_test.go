package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"
)

// openPostgres opens a store on a fresh schema of the PostgreSQL database
// named by LISTINGPROXY_TEST_POSTGRES_DSN (a URL), dropped when the test
// ends.
func openPostgres(t *testing.T) *Store {
	t.Helper()
	st, _, _ := openPostgresWith(t, nil)
	return st
}

// openPostgresWith is openPostgres with cfg adjusted by edit (nil: none). It
// also returns a pool on the test database outside the store, and the name
// of the test schema, which is also the application_name of the store's
// connections.
func openPostgresWith(t *testing.T, edit func(*Config)) (st *Store, admin *sql.DB, schema string) {
	t.Helper()
	dsn := os.Getenv("LISTINGPROXY_TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("LISTINGPROXY_TEST_POSTGRES_DSN is not set; set it to run the PostgreSQL tests, " +
			"e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
	}
	ctx := context.Background()
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	schema = fmt.Sprintf("listingproxy_test_%d_%d", os.Getpid(), time.Now().UnixNano())
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := admin.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop test schema: %v", err)
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("LISTINGPROXY_TEST_POSTGRES_DSN must be a URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	q.Set("application_name", schema)
	u.RawQuery = q.Encode()
	cfg := Config{Dialect: "postgres", DSN: u.String(), Now: func() time.Time { return testNow }}
	if edit != nil {
		edit(&cfg)
	}
	st, err = Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, admin, schema
}

func TestPostgresBackend(t *testing.T) {
	testEngine(t, openPostgres(t))
}
