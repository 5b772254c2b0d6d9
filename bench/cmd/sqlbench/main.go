// Command sqlbench measures the SQL backends without the cache: it calls
// the store directly, through upstream.Backend with criteria from normalize
// (no HTTP, no cache, no coalescing), runs a fixed mix of list queries on
// each backend, and prints p50/p99 latency per query and engine plus the
// plan of each query's main statement, flagging any full scan of the
// properties table.
//
//	sqlbench -config bench.yaml -backends pg,mysql [-n 200] [-tenant harbour] [-country au]
//
// The backends must hold the demo data (listingproxy seed); bench/sql.sh
// seeds 1,000,000 properties and runs it. The query values fit the demo at
// any size of at least 100,000 properties.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"listingproxy/config"
	"listingproxy/normalize"
	"listingproxy/upstream"
	"listingproxy/upstream/sqlstore"
)

// mix is the fixed query mix: every list query a client makes often, each
// for a 20-result page.
var mix = []struct{ name, resource, query string }{
	{"id", "properties", "id=123456"},
	{"agency_id", "properties", "agency_id=HB-AU-123456"},
	{"status+category", "properties", "status=current&category=commercial"},
	{"price range", "properties", "price_from=500000&price_to=600000"},
	{"bedrooms", "properties", "bedrooms=4"},
	{"geo 5 km", "properties", "geo[lat]=-33.8915&geo[long]=151.2767&geo[rad]=5"},
	{"agent_id", "properties", "agent_id=2500"},
	{"approved range", "properties", "approved_from=20240101&approved_to=20240331"},
	{"order+offset", "properties", "order=price&offset=10000"},
	{"agent name", "agents", "name=smith"},
}

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sqlbench:", err)
		os.Exit(1)
	}
}

type result struct {
	p50, p99 time.Duration
	rows     int
	plan     string
	scans    bool // the plan reads the whole properties table
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("sqlbench", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "configuration file naming the backends (required)")
	names := fs.String("backends", "", "comma-separated SQL backends of the configuration (required)")
	n := fs.Int("n", 200, "timed iterations per query and backend")
	warmup := fs.Int("warmup", 10, "untimed iterations per query and backend first")
	tenant := fs.String("tenant", "harbour", "backend tenant (tenants.name)")
	country := fs.String("country", "au", "country")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cfgPath == "" || *names == "" || *n < 1 {
		return fmt.Errorf("-config and -backends are required, -n at least 1")
	}
	cfg, err := config.Load(*cfgPath, os.Getenv)
	if err != nil {
		return err
	}
	backends := strings.Split(*names, ",")
	results := map[string][]result{}
	kinds := map[string]string{}
	sc := upstream.Scope{Tenant: *tenant, Country: *country}
	for _, name := range backends {
		b, ok := cfg.Backends[name]
		if !ok {
			return fmt.Errorf("no backend %q in %s", name, *cfgPath)
		}
		kinds[name] = b.Kind
		st, err := sqlstore.Open(ctx, sqlstore.Config{Dialect: b.Kind, DSN: b.DSN, MaxOpenConns: 2})
		if err != nil {
			return fmt.Errorf("backend %s: %w", name, err)
		}
		for _, m := range mix {
			c, err := parse(m.resource, m.query)
			if err != nil {
				st.Close()
				return fmt.Errorf("%s: %w", m.name, err)
			}
			r, err := measure(ctx, st, sc, c, *warmup, *n)
			if err != nil {
				st.Close()
				return fmt.Errorf("backend %s: %s: %w", name, m.name, err)
			}
			if r.plan, err = st.Explain(ctx, sc, c); err != nil {
				st.Close()
				return fmt.Errorf("backend %s: %s: %w", name, m.name, err)
			}
			r.scans = fullScan(b.Kind, r.plan)
			results[name] = append(results[name], r)
			fmt.Fprintf(os.Stderr, "%s %-16s p50 %-8s p99 %-8s rows %d\n", name, m.name, ms(r.p50), ms(r.p99), r.rows)
		}
		st.Close()
	}

	fmt.Fprintf(out, "%d iterations per query after %d warm-up, limit 20, short detail, tenant %s, country %s, cache off\n\n", *n, *warmup, *tenant, *country)
	header := "| query | criteria |"
	rule := "|---|---|"
	for _, name := range backends {
		header += fmt.Sprintf(" %s p50 | %s p99 | rows |", name, name)
		rule += "---:|---:|---:|"
	}
	fmt.Fprintln(out, header)
	fmt.Fprintln(out, rule)
	for i, m := range mix {
		line := fmt.Sprintf("| %s | `%s` |", m.name, m.query)
		for _, name := range backends {
			r := results[name][i]
			flag := ""
			if r.scans {
				flag = " (full scan!)"
			}
			line += fmt.Sprintf(" %s | %s%s | %d |", ms(r.p50), ms(r.p99), flag, r.rows)
		}
		fmt.Fprintln(out, line)
	}
	for _, name := range backends {
		fmt.Fprintf(out, "\n## Plans on %s (%s)\n", name, kinds[name])
		for i, m := range mix {
			r := results[name][i]
			verdict := "no full scan of properties"
			if r.scans {
				verdict = "FULL SCAN OF PROPERTIES"
			}
			fmt.Fprintf(out, "\n### %s: %s (%s)\n\n", m.name, m.query, verdict)
			for line := range strings.Lines(r.plan) {
				fmt.Fprintf(out, "    %s", line)
			}
		}
	}
	return nil
}

func parse(resource, query string) (normalize.Criteria, error) {
	q, err := url.ParseQuery(query + "&limit=20")
	if err != nil {
		return normalize.Criteria{}, err
	}
	var c normalize.Criteria
	var errs normalize.Errors
	if resource == "agents" {
		c, errs = normalize.ParseAgents(q, normalize.Options{})
	} else {
		c, errs = normalize.ParseProperties(q, normalize.Options{})
	}
	if errs != nil {
		return c, errs
	}
	return c, nil
}

// measure runs the query warmup+n times, one at a time, and returns the
// latency percentiles of the timed runs and the page size.
func measure(ctx context.Context, b upstream.Backend, sc upstream.Scope, c normalize.Criteria, warmup, n int) (result, error) {
	call := func() (int, error) {
		if c.Resource() == normalize.Agents {
			as, err := b.ListAgents(ctx, sc, c)
			return len(as), err
		}
		ps, err := b.ListProperties(ctx, sc, c)
		return len(ps), err
	}
	var r result
	for range warmup {
		if _, err := call(); err != nil {
			return r, err
		}
	}
	lat := make([]time.Duration, n)
	for i := range lat {
		start := time.Now()
		rows, err := call()
		lat[i] = time.Since(start)
		if err != nil {
			return r, err
		}
		r.rows = rows
	}
	slices.Sort(lat)
	r.p50 = lat[(n-1)*50/100]
	r.p99 = lat[(n-1)*99/100]
	return r, nil
}

var (
	pgSeqScan  = regexp.MustCompile(`Seq Scan on properties\b`)
	mysqlFullP = regexp.MustCompile(`(?m)table: (p|properties), .*type: ALL\b`)
	sqliteScan = regexp.MustCompile(`(?m)^SCAN (p|properties)\s*$`)
)

// fullScan reports a plan that reads the whole properties table.
func fullScan(kind, plan string) bool {
	switch kind {
	case config.KindPostgres:
		return pgSeqScan.MatchString(plan)
	case config.KindMySQL:
		return mysqlFullP.MatchString(plan)
	}
	return sqliteScan.MatchString(plan)
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000)
}
