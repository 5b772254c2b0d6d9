// Command sqlbench measures the SQL backends without the cache: it calls
// the store directly, through upstream.Backend with criteria from normalize
// (no HTTP, no cache, no coalescing), runs a fixed mix of list queries on
// each backend, and prints p50/p99 latency per query and engine plus the
// plan of each query's statements (Store.Explain), flagging what
// Store.PlanProblems finds: a full scan, or a subquery or lookup run once
// per row of a large walk.
//
//	sqlbench -config bench.yaml -backends pg,mysql [-n 200] [-scopes harbour/au,summit/nz] [-properties 1000000 -agents 20000] [-statements]
//
// -statements adds the median time of each statement of each query (from
// the store's spans); the output starts with the load average during each
// backend's run.
//
// The backends must hold the demo data at the given size (listingproxy
// seed); bench/sql.sh seeds 1,000,000 properties and runs it. Each query
// runs in each scope: by default the first and the last tenant x country
// block, whose ids are first and last in every primary key, so a plan that
// walks the primary key shows in the last.
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
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"listingproxy/config"
	"listingproxy/normalize"
	"listingproxy/upstream"
	"listingproxy/upstream/sqlstore"
)

// scope is a tenant and country of the demo, and what the mix needs to know
// about it: the demo numbers properties and agents block by block (harbour
// au, harbour nz, summit au, summit nz), so the first block's ids come first
// in every primary key and the last block's last.
type scope struct {
	tenant, country string
	block           int    // 0..3
	prefix          string // agency id prefix
	lat, long       float64
}

var scopes = map[string]scope{
	"harbour/au": {"harbour", "au", 0, "HB-AU", -33.8915, 151.2767}, // Bondi
	"harbour/nz": {"harbour", "nz", 1, "HB-NZ", -36.8547, 174.7436}, // Ponsonby
	"summit/au":  {"summit", "au", 2, "SM-AU", -33.8915, 151.2767},
	"summit/nz":  {"summit", "nz", 3, "SM-NZ", -36.8547, 174.7436},
}

// mix is the fixed query mix for a scope: every list query a client makes
// often, each for a 20-result page (limit=20 is added), and the agent_id
// filters a hostile client can send: 500 ids (the most normalize accepts)
// of the scope, of the other tenant, and of no agent.
func mix(sc scope, perBlockProps, perBlockAgents int) []struct{ name, resource, query string } {
	i := perBlockProps / 2 // a property and an agent from the middle of the block
	agent := sc.block*perBlockAgents + perBlockAgents/2
	other := (sc.block + 2) % 4 // the other tenant, same country
	idsN := func(n, first, step int) string {
		var b strings.Builder
		for k := range n {
			if k > 0 {
				b.WriteByte('&')
			}
			fmt.Fprintf(&b, "agent_id[]=%d", first+k*step)
		}
		return b.String()
	}
	ids := func(first, step int) string { return idsN(500, first, step) }
	step := max(1, perBlockAgents/500)
	return []struct{ name, resource, query string }{
		{"id", "properties", fmt.Sprintf("id=%d", sc.block*perBlockProps+i)},
		{"agency_id", "properties", fmt.Sprintf("agency_id=%s-%05d", sc.prefix, i)},
		{"status+category", "properties", "status=current&category=commercial"},
		{"price range", "properties", "price_from=500000&price_to=600000"},
		{"price range wide", "properties", "price_from=1&price_to=100000000"},
		{"bedrooms", "properties", "bedrooms=4"},
		{"street name", "properties", "street_name=church%20street"},
		{"geo 5 km", "properties", fmt.Sprintf("geo[lat]=%g&geo[long]=%g&geo[rad]=5", sc.lat, sc.long)},
		{"geo 5 km by price", "properties", fmt.Sprintf("geo[lat]=%g&geo[long]=%g&geo[rad]=5&order=price", sc.lat, sc.long)},
		// A large box in another order: walked in the order's index.
		{"geo 5 km by last_updated", "properties", fmt.Sprintf("geo[lat]=%g&geo[long]=%g&geo[rad]=5&order=last_updated", sc.lat, sc.long)},
		// Deep pages of a large box: past the walk's reach, the box is read.
		{"geo 5 km offset 1000", "properties", fmt.Sprintf("geo[lat]=%g&geo[long]=%g&geo[rad]=5&offset=1000", sc.lat, sc.long)},
		{"geo 5 km by last_updated offset 1000", "properties", fmt.Sprintf("geo[lat]=%g&geo[long]=%g&geo[rad]=5&order=last_updated&offset=1000", sc.lat, sc.long)},
		{"agent_id", "properties", fmt.Sprintf("agent_id=%d", agent)},
		{"agent_id+status", "properties", fmt.Sprintf("agent_id=%d&status=sold", agent)},
		// 9 agents of about 60 properties each (522 links): looked up by
		// id, below the 2,000 links from which the store walks the scope
		// (a walk of ~9,600 rows when that threshold was 500).
		{"agent_id x9", "properties", idsN(9, sc.block*perBlockAgents+1, step)},
		{"agent_id x500", "properties", ids(sc.block*perBlockAgents+1, step)},
		{"agent_id x500 by price", "properties", ids(sc.block*perBlockAgents+1, step) + "&order=price"},
		{"agent_id x500 offset 1000", "properties", ids(sc.block*perBlockAgents+1, step) + "&offset=1000"},
		// 40 agents of about 60 properties each (2,350 links): just past the
		// 2,000 links a first page looks up, the walk to offset 1,000 read
		// ~110,000 rows; a deep page looks up more (maxLinkedFor).
		{"agent_id x40 offset 1000", "properties", idsN(40, sc.block*perBlockAgents+1, step) + "&offset=1000"},
		{"agent_id x500 other tenant", "properties", ids(other*perBlockAgents+1, step)},
		{"agent_id x500 unknown", "properties", ids(4*perBlockAgents+1, 1)},
		{"approved range", "properties", "approved_from=20240101&approved_to=20240331"},
		{"order+offset", "properties", "order=price&offset=10000"},
		// The same walk half as deep: the difference is the cost of 50,000
		// entries of offset (docs/sql.md, "Deep pages and max_offset").
		{"order+offset 50000", "properties", "order=suburb&offset=50000"},
		{"order+offset deep", "properties", "order=suburb&offset=100000"},
		{"agent name", "agents", "name=smith"},
		{"agent name rare", "agents", "name=zzz"},
	}
}

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sqlbench:", err)
		os.Exit(1)
	}
}

type result struct {
	p50, p99   time.Duration
	rows       int      // the smallest page over the scopes
	plans      []string // one per scope
	problems   []string // sqlstore.PlanProblems over the scopes' plans
	dense      bool     // a plan is of the dense agent filter (a bounded per-row walk)
	statements []string // per scope: the median time of each statement (-statements)
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("sqlbench", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "configuration file naming the backends (required)")
	names := fs.String("backends", "", "comma-separated SQL backends of the configuration (required)")
	n := fs.Int("n", 200, "timed iterations per query, backend and scope")
	warmup := fs.Int("warmup", 10, "untimed iterations per query, backend and scope first")
	scopeList := fs.String("scopes", "harbour/au,summit/nz", "tenant/country scopes; each query runs in each, and p50/p99 are over all runs")
	properties := fs.Int("properties", 1000000, "total properties the backends were seeded with")
	agents := fs.Int("agents", 20000, "total agents the backends were seeded with")
	only := fs.String("only", "", "run only the queries whose name matches this regular expression")
	stmts := fs.Bool("statements", false, "also print where each query's time goes: the median time of each statement it runs (from the store's spans)")
	migrate := fs.Bool("migrate", false, "first create the schema's missing indexes (Store.Migrate: new indexes of a newer listingproxy) and analyze")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cfgPath == "" || *names == "" || *n < 1 {
		return fmt.Errorf("-config and -backends are required, -n at least 1")
	}
	var scs []scope
	for _, name := range strings.Split(*scopeList, ",") {
		sc, ok := scopes[name]
		if !ok {
			return fmt.Errorf("unknown scope %q (want tenant/country of the demo, e.g. harbour/au)", name)
		}
		scs = append(scs, sc)
	}
	cfg, err := config.Load(*cfgPath, os.Getenv)
	if err != nil {
		return err
	}
	backends := strings.Split(*names, ",")
	kinds := map[string]string{}
	results := map[string][]result{} // by backend, in mix order
	loads := map[string]string{}     // by backend: the load average during its run
	perProps, perAgents := *properties/4, *agents/4
	keep, err := regexp.Compile(*only)
	if err != nil {
		return fmt.Errorf("-only: %w", err)
	}
	mixOf := func(sc scope) []struct{ name, resource, query string } {
		var ms []struct{ name, resource, query string }
		for _, m := range mix(sc, perProps, perAgents) {
			if keep.MatchString(m.name) {
				ms = append(ms, m)
			}
		}
		return ms
	}
	queries := mixOf(scs[0])
	for _, name := range backends {
		b, ok := cfg.Backends[name]
		if !ok || b.SQL == nil {
			return fmt.Errorf("no SQL backend %q in %s", name, *cfgPath)
		}
		kinds[name] = b.Kind
		rec := &spanTimes{}
		st, err := sqlstore.Open(ctx, sqlstore.Config{Dialect: b.Kind, DSN: b.SQL.DSN, MaxOpenConns: 2,
			TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))})
		if err != nil {
			return fmt.Errorf("backend %s: %w", name, err)
		}
		if *migrate {
			start := time.Now()
			if err := st.Migrate(ctx); err != nil {
				st.Close()
				return fmt.Errorf("backend %s: %w", name, err)
			}
			if err := st.Analyze(ctx); err != nil {
				st.Close()
				return fmt.Errorf("backend %s: %w", name, err)
			}
			fmt.Fprintf(os.Stderr, "%s: migrated and analyzed in %s\n", name, time.Since(start).Round(time.Second))
		}
		loadStart := loadAvg()
		for qi := range queries {
			var r result
			var lat []time.Duration
			for _, sc := range scs {
				m := mixOf(sc)[qi]
				c, err := parse(m.resource, m.query)
				if err != nil {
					st.Close()
					return fmt.Errorf("%s: %w", m.name, err)
				}
				us := upstream.Scope{Tenant: sc.tenant, Country: sc.country}
				rec.start(*warmup)
				l, rows, err := measure(ctx, st, us, c, *warmup, *n)
				r.statements = append(r.statements, rec.summary())
				if err != nil {
					st.Close()
					return fmt.Errorf("backend %s: %s %s: %w", name, sc.tenant, m.name, err)
				}
				lat = append(lat, l...)
				if len(r.plans) == 0 || rows < r.rows {
					r.rows = rows
				}
				plan, err := st.Explain(ctx, us, c)
				if err != nil {
					st.Close()
					return fmt.Errorf("backend %s: %s: %w", name, m.name, err)
				}
				r.plans = append(r.plans, fmt.Sprintf("%s/%s, %s:\n%s", sc.tenant, sc.country, shortQuery(m.query), plan))
				for _, p := range st.PlanProblems(plan) {
					if !slices.Contains(r.problems, p) {
						r.problems = append(r.problems, p)
					}
				}
				r.dense = r.dense || strings.Contains(plan, "dense agent filter")
			}
			slices.Sort(lat)
			r.p50, r.p99 = lat[(len(lat)-1)*50/100], lat[(len(lat)-1)*99/100]
			results[name] = append(results[name], r)
			fmt.Fprintf(os.Stderr, "%s %-16s p50 %-8s p99 %-8s rows %d\n", name, queries[qi].name, ms(r.p50), ms(r.p99), r.rows)
		}
		st.Close()
		loads[name] = loadStart + " at the start, " + loadAvg() + " at the end"
	}

	var scopeNames []string
	for _, sc := range scs {
		scopeNames = append(scopeNames, sc.tenant+"/"+sc.country)
	}
	fmt.Fprintf(out, "%d iterations per query in each of %s after %d warm-up; limit 20, short detail, cache off\n",
		*n, strings.Join(scopeNames, " and "), *warmup)
	for _, name := range backends {
		fmt.Fprintf(out, "load average (1, 5, 15 min) during %s: %s\n", name, loads[name])
	}
	fmt.Fprintln(out)
	header := "| query | criteria (" + scopeNames[0] + ") |"
	rule := "|---|---|"
	for _, name := range backends {
		header += fmt.Sprintf(" %s p50 | %s p99 |", name, name)
		rule += "---:|---:|"
	}
	fmt.Fprintln(out, header)
	fmt.Fprintln(out, rule)
	for i, m := range queries {
		line := fmt.Sprintf("| %s | `%s` |", m.name, shortQuery(m.query))
		for _, name := range backends {
			r := results[name][i]
			flag := ""
			switch {
			case len(r.problems) > 0 && r.dense:
				flag = " (per-row walk, dense agents)"
			case len(r.problems) > 0:
				flag = " (WALK!)"
			}
			line += fmt.Sprintf(" %s | %s%s |", ms(r.p50), ms(r.p99), flag)
		}
		fmt.Fprintln(out, line)
	}
	if *stmts {
		for _, name := range backends {
			fmt.Fprintf(out, "\n## Statements on %s: median time of each (the rest of a call is Go: scanning, rendering nothing)\n\n", name)
			for i, m := range queries {
				for j, sum := range results[name][i].statements {
					fmt.Fprintf(out, "- %s (%s): %s\n", m.name, scopeNames[j], sum)
				}
			}
		}
	}
	for _, name := range backends {
		fmt.Fprintf(out, "\n## Plans on %s (%s)\n", name, kinds[name])
		for i, m := range queries {
			r := results[name][i]
			verdict := "no large walk"
			if len(r.problems) > 0 {
				verdict = strings.Join(r.problems, "; ")
			}
			if r.dense {
				verdict += "; dense agent filter: the walk stops once the page is full"
			}
			fmt.Fprintf(out, "\n### %s (%s)\n", m.name, verdict)
			for _, plan := range r.plans {
				fmt.Fprintln(out)
				for line := range strings.Lines(plan) {
					fmt.Fprintf(out, "    %s", line)
				}
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
// latencies of the timed runs and the page size.
func measure(ctx context.Context, b upstream.Backend, sc upstream.Scope, c normalize.Criteria, warmup, n int) ([]time.Duration, int, error) {
	call := func() (int, error) {
		if c.Resource() == normalize.Agents {
			as, err := b.ListAgents(ctx, sc, c)
			return len(as), err
		}
		ps, err := b.ListProperties(ctx, sc, c)
		return len(ps), err
	}
	for range warmup {
		if _, err := call(); err != nil {
			return nil, 0, err
		}
	}
	lat := make([]time.Duration, n)
	rows := 0
	for i := range lat {
		start := time.Now()
		var err error
		rows, err = call()
		lat[i] = time.Since(start)
		if err != nil {
			return nil, 0, err
		}
	}
	return lat, rows, nil
}

// shortQuery abbreviates a query of many agent ids for display: the first
// two and the count.
func shortQuery(q string) string {
	n := strings.Count(q, "agent_id[]=")
	if n <= 3 {
		return q
	}
	parts := strings.Split(q, "&")
	var rest []string
	for _, p := range parts[n:] {
		rest = append(rest, "&"+p)
	}
	return fmt.Sprintf("%s&%s&... (%d agent ids)%s", parts[0], parts[1], n, strings.Join(rest, ""))
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000)
}

// loadAvg is the machine's load average over 1, 5 and 15 minutes
// (/proc/loadavg), or "unknown": figures taken on a loaded machine are
// partly time spent waiting for a CPU.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

// spanTimes records the duration of the store's statement spans (one per
// statement it runs, "sql.<name>") of the timed calls of a query: the
// first skip spans of each name after start are the warm-up's.
type spanTimes struct {
	mu    sync.Mutex
	skip  int
	seen  map[string]int
	times map[string][]time.Duration
	order []string
}

func (t *spanTimes) start(warmup int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.skip, t.seen, t.times, t.order = warmup, map[string]int{}, map[string][]time.Duration{}, nil
}

func (t *spanTimes) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (t *spanTimes) Shutdown(context.Context) error                  { return nil }
func (t *spanTimes) ForceFlush(context.Context) error                { return nil }

func (t *spanTimes) OnEnd(s sdktrace.ReadOnlySpan) {
	t.mu.Lock()
	defer t.mu.Unlock()
	name := strings.TrimPrefix(s.Name(), "sql.")
	if t.seen == nil {
		return
	}
	t.seen[name]++
	if t.seen[name] <= t.skip {
		return
	}
	if _, ok := t.times[name]; !ok {
		t.order = append(t.order, name)
	}
	t.times[name] = append(t.times[name], s.EndTime().Sub(s.StartTime()))
}

// summary is "name median (runs), ..." for the statements seen since start.
func (t *spanTimes) summary() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var parts []string
	for _, name := range t.order {
		d := slices.Clone(t.times[name])
		slices.Sort(d)
		parts = append(parts, fmt.Sprintf("%s %s (%d)", name, ms(d[(len(d)-1)/2]), len(d)))
	}
	return strings.Join(parts, ", ")
}
