package main

import (
	"context"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"listingproxy/config"
	"listingproxy/internal/testkit"
)

func TestSeedCommand(t *testing.T) {
	path := demoConfig(t)
	ctx := context.Background()
	seed := func(args ...string) (stdout, stderr string, err error) {
		var out, errw strings.Builder
		err = run(ctx, append([]string{"listingproxy", "seed", "-config", path}, args...), func(string) string { return "" }, strings.NewReader(""), &out, &errw)
		return out.String(), errw.String(), err
	}

	out, progress, err := seed("-backend", "demo", "-properties", "98", "-agents", "12", "-now", "2026-11-21")
	if err != nil {
		t.Fatalf("seed: %v\n%s", err, progress)
	}
	if want := "seeded backend demo (sqlite): 100 properties, 12 agents in "; !strings.HasPrefix(out, want) {
		t.Errorf("stdout = %q, want it to start with %q", out, want)
	}
	if !strings.Contains(progress, "seed: 100% 100/100 properties") {
		t.Errorf("stderr (not a terminal) = %q, want plain progress lines ending at 100%%", progress)
	}

	// The only SQL backend is the default; a seeded database is refused.
	if _, _, err := seed("-properties", "40"); err == nil || !strings.Contains(err.Error(), "already holds data; -reset reloads the demo") {
		t.Errorf("seeding again: err = %v, want a refusal naming -reset", err)
	}
	if out, _, err := seed("-properties", "40", "-agents", "12", "-reset"); err != nil || !strings.Contains(out, ": 40 properties, 12 agents") {
		t.Errorf("seed -reset = %q, %v", out, err)
	}

	// The service serves what was seeded.
	a := newAppFrom(t, path)
	w := demoGet(t, a.handler, "harbour", "/au/properties.json?limit=1000")
	if !strings.HasPrefix(w.Body.String(), `{"properties":{"count":"10",`) {
		t.Errorf("harbour's au properties after seeding 40: %.80s", w.Body)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-backend", "nope"}, `no backend "nope"`},
		{[]string{"-now", "yesterday"}, `-now: "yesterday" is neither`},
		{[]string{"-properties", "-1"}, "must not be negative"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		if _, _, err := seed(tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("seed %q: err = %v, want it to contain %q", tc.args, err, tc.want)
		}
	}
}

func TestSeedRefusesNonSQLBackend(t *testing.T) {
	err := run(context.Background(), []string{"listingproxy", "seed", "-config", "../../testdata/config.crm.yaml", "-backend", "legacy"},
		func(k string) string { return map[string]string{"SUMMIT_CRM_PASSWORD": "x"}[k] }, nil, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "backend legacy is crm, not a SQL backend") {
		t.Errorf("err = %v", err)
	}
}

// TestEngineConfigsLoad checks the shipped PostgreSQL and MySQL
// configurations: they load, put both tenants on one backend of the right
// kind, and have exactly config.yaml's users.
func TestEngineConfigsLoad(t *testing.T) {
	env := map[string]string{
		"LISTINGPROXY_PG_DSN":    "postgres://postgres@127.0.0.1:5432/listingproxy?sslmode=disable",
		"LISTINGPROXY_MYSQL_DSN": "root@tcp(127.0.0.1:3306)/listingproxy?parseTime=true",
	}
	getenv := func(k string) string { return env[k] }
	base, err := config.Load("../../config.yaml", getenv)
	if err != nil {
		t.Fatal(err)
	}
	for file, kind := range map[string]string{"config.postgres.yaml": config.KindPostgres, "config.mysql.yaml": config.KindMySQL} {
		t.Run(file, func(t *testing.T) {
			cfg, err := config.Load(filepath.Join("..", "..", "testdata", file), getenv)
			if err != nil {
				t.Fatal(err)
			}
			b := cfg.Backends["main"]
			if b.Kind != kind || b.SQL == nil || !b.SQL.SeedDemo || b.SQL.DSN == "" {
				t.Errorf("backend main = %+v, want kind %s with seed_demo and a DSN", b, kind)
			}
			if b.SQL.Notify != (kind == config.KindPostgres) {
				t.Errorf("notify = %v", b.SQL.Notify)
			}
			for _, tn := range []string{"harbour", "summit"} {
				if cfg.Tenants[tn].Backend != "main" {
					t.Errorf("tenant %s on backend %q, want main", tn, cfg.Tenants[tn].Backend)
				}
			}
			if !slices.EqualFunc(cfg.Users, base.Users, func(a, b config.User) bool {
				return a.Username == b.Username && a.PasswordBcrypt == b.PasswordBcrypt && a.Tenant == b.Tenant && slices.Equal(a.Permissions, b.Permissions)
			}) {
				t.Errorf("users differ from config.yaml's")
			}
		})
	}
}

// TestNotifyPurgesCache serves the demo from PostgreSQL with notify: true,
// warms a cached body, changes the row behind it, and waits for the new
// body: well within the 60s TTL, so only the notification's purge can
// explain it.
func TestNotifyPurgesCache(t *testing.T) {
	a, db := notifyApp(t)
	// Wait for the listener (its connection carries the test's
	// application_name), which purges everything once when it connects.
	testkit.WaitFor(t, "the change listener to connect", func() bool {
		var n int
		if err := db.QueryRow("SELECT count(*) FROM pg_stat_activity WHERE application_name = current_setting('application_name') AND query LIKE 'LISTEN %'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n > 0
	})
	target := "/au/properties/1.json"
	testkit.WaitFor(t, "a cache hit for "+target, func() bool {
		w := demoGet(t, a.handler, "harbour", target)
		if strings.Contains(w.Body.String(), "Changed by the legacy app") {
			t.Fatalf("unexpected body %s", w.Body)
		}
		return strings.Contains(w.Header().Get("Cache-Status"), "hit")
	})
	if _, err := db.Exec("UPDATE properties SET description = 'Changed by the legacy app' WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	// This bound is part of what the test shows, not a watchdog: it must
	// stay well under the 60s TTL, or an expiry could explain the new body.
	deadline := time.Now().Add(20 * time.Second)
	for {
		w := demoGet(t, a.handler, "harbour", target)
		if strings.Contains(w.Body.String(), "Changed by the legacy app") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cached body was never purged: %s", w.Body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
