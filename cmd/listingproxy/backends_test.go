package main

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"listingproxy/config"
	"listingproxy/internal/testkit"
	"listingproxy/upstream"
	"listingproxy/upstream/sqlstore"
)

// TestEveryKindOpens: config's backend kinds and cmd's openers are the same
// set, and a kind without an opener is an error naming it, not a guess (the
// old switch opened any unknown kind as SQL).
func TestEveryKindOpens(t *testing.T) {
	t.Parallel()
	if diff := cmp.Diff(slices.Sorted(slices.Values(config.Kinds())), slices.Sorted(maps.Keys(backendKinds))); diff != "" {
		t.Errorf("config kinds vs openers (-config +cmd):\n%s", diff)
	}
	cfg := &config.Config{Backends: map[string]config.Backend{"x": {Kind: "oracle"}}}
	_, _, err := openBackend(context.Background(), "x", cfg, slog.New(slog.DiscardHandler), time.Now, nil)
	if err == nil || !strings.Contains(err.Error(), `backend x: kind "oracle" cannot be opened`) {
		t.Errorf("unknown kind: err = %v, want it named", err)
	}
}

// TestDemoInstancesStartTogether opens the demo backend (seed_demo) of two
// instances at once on one fresh SQLite file, as two processes started
// together do: both open and serve the one seeded copy; neither fails on
// the other's rows (it used to exit with "UNIQUE constraint failed:
// tenants.id").
func TestDemoInstancesStartTogether(t *testing.T) {
	t.Parallel()
	dsn := filepath.Join(t.TempDir(), "demo.db")
	cfg := &config.Config{Backends: map[string]config.Backend{
		"demo": {Kind: config.KindSQLite, SQL: &config.SQLBackend{DSN: dsn, SeedDemo: true}},
	}}
	const n = 2
	type opened struct {
		b     upstream.Backend
		close func()
		err   error
	}
	results := make(chan opened, n)
	start := make(chan struct{})
	for range n {
		go func() {
			<-start
			b, closeFn, err := openBackend(context.Background(), "demo", cfg, slog.New(slog.DiscardHandler), time.Now, nil)
			results <- opened{b, closeFn, err}
		}()
	}
	close(start)
	for range n {
		r := <-results
		if r.err != nil {
			t.Errorf("an instance failed to open the demo: %v", r.err)
			continue
		}
		t.Cleanup(r.close)
		// A store whose first ping met the other's lock (SQLite answers
		// "database is locked" at once while a connection switches the
		// file to WAL) prepares itself again in the background, as for a
		// database down at start: it serves once that is done.
		testkit.WaitFor(t, "the instance to serve the seeded demo", func() bool {
			_, err := r.b.GetProperty(context.Background(), upstream.Scope{Tenant: "harbour", Country: "au"}, 1)
			if err != nil && !errors.Is(err, sqlstore.ErrNotReady) {
				t.Fatalf("property 1 of the seeded demo: %v", err)
			}
			return err == nil
		})
	}
}
