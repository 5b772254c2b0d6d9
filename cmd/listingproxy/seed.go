package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"listingproxy/internal/progress"
	"listingproxy/upstream/sqlstore"
	"listingproxy/upstream/sqlstore/demo"
)

// seedCommand loads the deterministic demo dataset into a configured SQL
// backend:
//
//	listingproxy seed [-config FILE] -backend NAME [-properties N] [-agents N] [-reset] [-now DATE]
//
// -properties and -agents are totals over the demo's 2 tenants x 2 countries,
// split evenly (rounded up to a multiple of 4). It creates the schema where
// missing and refuses a database that already holds data unless -reset,
// which drops and recreates the tables first (and refuses a database holding
// tenants other than the demo's). Progress goes to stderr: a bar on a
// terminal, a line every 10% otherwise.
func seedCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := commandFlags("seed", "[-config FILE] [-backend NAME] [-properties N] [-agents N] [-reset] [-now DATE]", stderr)
	cfgPath := fs.String("config", "", "configuration file (default: ./config.yaml if present, else the embedded demo configuration)")
	backend := fs.String("backend", "", "name of the SQL backend in the configuration to fill (required unless the configuration has only one SQL backend)")
	properties := fs.Int("properties", 0, fmt.Sprintf("total properties over 2 tenants x 2 countries (default %d)", demo.DefaultPropertiesPerTenantCountry*4))
	agents := fs.Int("agents", 0, fmt.Sprintf("total agents over 2 tenants x 2 countries (default %d)", demo.DefaultAgentsPerTenantCountry*4))
	reset := fs.Bool("reset", false, "drop and recreate the demo tables first (refused if the database holds non-demo tenants)")
	nowFlag := fs.String("now", "", "fixed clock for reproducible data: YYYY-MM-DD or RFC 3339 (default: now)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf(fs, "unexpected argument %q", fs.Arg(0))
	}
	if *properties < 0 || *agents < 0 {
		return errors.New("seed: -properties and -agents must not be negative")
	}
	now := time.Now()
	if *nowFlag != "" {
		var err error
		if now, err = parseNow(*nowFlag); err != nil {
			return fmt.Errorf("seed: -now: %w", err)
		}
	}

	cfg, source, err := loadConfig(*cfgPath, getenv)
	if err != nil {
		return err
	}
	name, b, err := cfg.SQLBackend(*backend)
	if err != nil {
		return fmt.Errorf("seed: %s: %w", source, err)
	}

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	o := demo.Totals(*properties, *agents, now)
	fmt.Fprintf(stderr, "seeding backend %s (%s): %d properties, %d agents\n", name, b.Kind, o.Properties(), o.Agents())
	p := progress.New(stderr, time.Now)
	start := time.Now()
	err = sqlstore.Load(ctx, b.Kind, b.SQL.DSN, sqlstore.LoadOptions{Demo: o, Reset: *reset, SeedOptions: sqlstore.SeedOptions{Progress: p.Report}})
	p.Finish()
	switch {
	case errors.Is(err, sqlstore.ErrNotEmpty):
		return fmt.Errorf("seed: backend %s already holds data; -reset reloads the demo", name)
	case err != nil:
		return fmt.Errorf("seed: backend %s: %w", name, err)
	}
	fmt.Fprintf(stdout, "seeded backend %s (%s): %d properties, %d agents in %s\n",
		name, b.Kind, o.Properties(), o.Agents(), time.Since(start).Round(100*time.Millisecond))
	return nil
}

// parseNow reads -now: YYYY-MM-DD or RFC 3339.
func parseNow(s string) (time.Time, error) {
	for _, layout := range []string{"2006-01-02", time.RFC3339} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is neither YYYY-MM-DD nor RFC 3339", s)
}
