package main

import (
	"context"
	"flag"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	cfg, err := config.Load(demoConfig(t), func(string) string { return "" })
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

func TestGoldenDocuments(t *testing.T) {
	a := newDemoApp(t)
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
