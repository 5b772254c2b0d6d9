package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/google/go-cmp/cmp"

	"listingproxy/config"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// goldenNow is the fixed clock of the golden demo: data generation and
// open-home filtering both use it, so the documents are reproducible.
var goldenNow = time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)

// newDemoApp wires the shipped configuration on a fresh SQLite demo
// database with a fixed clock.
func newDemoApp(t *testing.T) *app {
	t.Helper()
	return newEngineApp(t, "sqlite")
}

// newEngineApp wires the shipped configuration with its demo backend on a
// fresh, empty database of engine (sqlite, postgres or mysql), which the
// app seeds with the fixed clock. PostgreSQL and MySQL come from
// LISTINGPROXY_TEST_POSTGRES_DSN and LISTINGPROXY_TEST_MYSQL_DSN; the test
// skips when the engine's variable is unset.
func newEngineApp(t *testing.T, engine string) *app {
	t.Helper()
	path, _ := engineConfig(t, engine, "")
	return newAppFrom(t, path)
}

// engineConfig is demoConfig with the demo backend on a fresh database of
// engine and extra lines added to the backend's settings. It returns the
// configuration's path and the backend's DSN.
func engineConfig(t testing.TB, engine, extra string) (path, dsn string) {
	t.Helper()
	path = demoConfig(t)
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	if engine != "sqlite" {
		dsn = freshDatabase(t, engine)
		s = strings.Replace(s, "kind: sqlite", "kind: "+engine, 1)
		s = regexp.MustCompile(`dsn: "file:[^"]*"`).ReplaceAllLiteralString(s, "dsn: '"+dsn+"'")
	}
	if extra != "" {
		s = strings.Replace(s, "    seed_demo: true", "    seed_demo: true\n"+extra, 1)
	}
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, dsn
}

func newAppFrom(t testing.TB, path string) *app {
	t.Helper()
	cfg, err := config.Load(path, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	a, err := build(context.Background(), cfg, slog.New(slog.DiscardHandler), func() time.Time { return goldenNow })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

func demoGet(t *testing.T, h http.Handler, user, target string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest("GET", target, nil)
	if user != "" {
		pw := map[string]string{"summit": "summit-demo"}[user]
		if pw == "" {
			pw = "harbour-demo"
		}
		r.SetBasicAuth(user, pw)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// goldenCases covers every endpoint x format x detail level, the price
// permission, errors and empty results.
var goldenCases = []struct{ name, user, target string }{
	{"properties-short", "harbour", "/au/properties.EXT?limit=3"},
	{"properties-full-prices", "harbour", "/au/properties.EXT?limit=3&detail=full"},
	{"properties-full-noprice", "harbour-noprice", "/au/properties.EXT?limit=3&detail=full"},
	{"properties-nz-summit", "summit", "/nz/properties.EXT?limit=2&detail=full&order=price"},
	{"properties-empty", "harbour", "/au/properties.EXT?bedrooms=1000"},
	{"property", "harbour", "/au/properties/1.EXT"},
	{"property-noprice", "harbour-noprice", "/au/properties/1.EXT"},
	{"property-not-found", "harbour", "/au/properties/999999.EXT"},
	{"property-bad-id", "harbour", "/au/properties/12x.EXT"},
	{"agents-short", "harbour", "/au/agents.EXT?limit=3"},
	{"agents-full", "harbour", "/au/agents.EXT?limit=3&detail=full"},
	{"agents-empty", "harbour", "/au/agents.EXT?name=nobody-has-this-name"},
	{"agent", "harbour", "/au/agents/1.EXT"},
	{"agent-not-found", "summit", "/au/agents/1.EXT"},
	{"errors-one", "harbour", "/au/properties.EXT?approved_from=2024-01-01"},
	{"errors-several", "harbour-short", "/au/properties.EXT?id=abc&category=house&approved_from=2024-01-01&detail=full"},
}

// freshDatabase creates an empty schema (PostgreSQL) or database (MySQL)
// on the test server of engine, dropped when the test ends, and returns a
// DSN for it.
func freshDatabase(t testing.TB, engine string) string {
	t.Helper()
	env := map[string]string{"postgres": "LISTINGPROXY_TEST_POSTGRES_DSN", "mysql": "LISTINGPROXY_TEST_MYSQL_DSN"}[engine]
	dsn := os.Getenv(env)
	if dsn == "" {
		t.Skipf("%s is not set; set it to run the %s tests (see README, Development)", env, engine)
	}
	driver := map[string]string{"postgres": "pgx", "mysql": "mysql"}[engine]
	admin, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	name := fmt.Sprintf("listingproxy_golden_%d_%d", os.Getpid(), time.Now().UnixNano())
	create, drop := "CREATE SCHEMA "+name, "DROP SCHEMA "+name+" CASCADE"
	if engine == "mysql" {
		create, drop = "CREATE DATABASE "+name+" CHARACTER SET utf8mb4 COLLATE utf8mb4_bin", "DROP DATABASE "+name
	}
	if _, err := admin.Exec(create); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(drop); err != nil {
			t.Errorf("drop test database: %v", err)
		}
	})
	if engine == "mysql" {
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			t.Fatal(err)
		}
		cfg.DBName = name
		return cfg.FormatDSN()
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("%s must be a URL: %v", env, err)
	}
	q := u.Query()
	q.Set("search_path", name)
	q.Set("application_name", name)
	u.RawQuery = q.Encode()
	return u.String()
}

// TestGoldenDocuments serves every golden case from the demo on each engine
// and compares the bodies with the same files, byte for byte. -update
// rewrites them from SQLite.
func TestGoldenDocuments(t *testing.T) {
	t.Parallel() // its own databases, named by process and time
	for _, engine := range []string{"sqlite", "postgres", "mysql"} {
		t.Run(engine, func(t *testing.T) {
			if *update && engine != "sqlite" {
				t.Skip("-update writes the goldens from SQLite only")
			}
			testGoldenDocuments(t, newEngineApp(t, engine))
		})
	}
}

func testGoldenDocuments(t *testing.T, a *app) {
	for _, tc := range goldenCases {
		for _, ext := range []string{"xml", "json"} {
			t.Run(tc.name+"."+ext, func(t *testing.T) {
				w := demoGet(t, a.handler, tc.user, strings.Replace(tc.target, "EXT", ext, 1))
				if w.Code != http.StatusOK {
					t.Fatalf("status %d: %s", w.Code, w.Body)
				}
				path := filepath.Join("..", "..", "testdata", "golden", tc.name+"."+ext)
				if *update {
					if err := os.WriteFile(path, w.Body.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run go test ./cmd/listingproxy -run Golden -update)", err)
				}
				if diff := cmp.Diff(string(want), w.Body.String()); diff != "" {
					t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
				}
			})
		}
	}
}
