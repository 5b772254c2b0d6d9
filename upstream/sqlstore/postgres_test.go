package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"listingproxy/internal/tcpproxy"
	"listingproxy/internal/testkit"
	"listingproxy/upstream"
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
	t.Parallel() // its own schema
	testEngine(t, openPostgres(t))
}

// TestPostgresOpenWaitsForTheDatabase: Open succeeds while PostgreSQL does
// not answer (here a stopped proxy in front of it), every request fails with
// ErrNotReady meanwhile, and once the database answers the store prepares
// itself (Setup once) and serves, without being reopened.
func TestPostgresOpenWaitsForTheDatabase(t *testing.T) {
	var px *tcpproxy.Proxy
	var setups atomic.Int32
	st, _, _ := openPostgresWith(t, func(c *Config) {
		u, err := url.Parse(c.DSN)
		if err != nil {
			t.Fatal(err)
		}
		if px, err = tcpproxy.Reserve(u.Host); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(px.Close)
		u.Host = px.Addr()
		c.DSN = u.String()
		c.Setup = func(ctx context.Context, s *Store) error {
			setups.Add(1)
			return s.Migrate(ctx)
		}
	})
	ctx := context.Background()
	sc := upstream.Scope{Tenant: "harbour", Country: "au"}
	if _, err := st.ListProperties(ctx, sc, parseProps(t, "")); !errors.Is(err, ErrNotReady) {
		t.Fatalf("ListProperties while the database is down: %v, want ErrNotReady", err)
	}
	if err := px.Start(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the store to be ready after the database came back", func() bool { return st.Ready() == nil })
	props, err := st.ListProperties(ctx, sc, parseProps(t, ""))
	if err != nil || len(props) != 0 {
		t.Errorf("ListProperties once ready: %d properties, %v; want none (empty schema), no error", len(props), err)
	}
	if n := setups.Load(); n != 1 {
		t.Errorf("Setup ran %d times, want once", n)
	}
}

// TestPostgresOpenFailsOnABadSetup: a database that answers but cannot be
// prepared is a configuration problem, reported by Open.
func TestPostgresOpenFailsOnABadSetup(t *testing.T) {
	dsn := os.Getenv("LISTINGPROXY_TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("LISTINGPROXY_TEST_POSTGRES_DSN is not set")
	}
	bad := errors.New("no permission")
	_, err := Open(context.Background(), Config{Dialect: "postgres", DSN: dsn, Setup: func(context.Context, *Store) error { return bad }})
	if !errors.Is(err, bad) {
		t.Errorf("Open = %v, want the setup's error", err)
	}
}
