package main

import (
	"bufio"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"gopkg.in/yaml.v3"

	"listingproxy/cache/disktier"
	"listingproxy/cache/redistier"
	"listingproxy/telemetry"
)

// The PromQL the dashboard and the alert rules under deploy/ hold, with
// the names of the metrics they read.
var (
	promString   = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	promBraces   = regexp.MustCompile(`\{[^{}]*\}`)
	promBrackets = regexp.MustCompile(`\[[^\[\]]*\]`)
	promLabels   = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	promDuration = regexp.MustCompile(`\b(\d+(ms|s|m|h|d|w|y))+\b`)
	promNumber   = regexp.MustCompile(`\b\d+(\.\d+)?([eE][+-]?\d+)?\b`)
	promIdent    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
	promKeywords = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true,
		"group_right": true, "and": true, "or": true, "unless": true, "bool": true, "offset": true, "inf": true, "nan": true}
	labelValues = regexp.MustCompile(`^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)`)
)

// promMetrics returns the metric names a PromQL expression reads: what is
// left once strings, label matchers, ranges, grouping clauses, numbers,
// functions and keywords are taken out. Grafana's $variables sit in
// strings and ranges, so they go too.
func promMetrics(expr string) []string {
	e := promString.ReplaceAllString(expr, `""`)
	e = promBraces.ReplaceAllString(e, " ")
	e = promBrackets.ReplaceAllString(e, " ")
	e = promLabels.ReplaceAllString(e, " ")
	e = promDuration.ReplaceAllString(e, " ") // offset 1h
	e = promNumber.ReplaceAllString(e, " ")
	var names []string
	for _, m := range promIdent.FindAllString(e, -1) {
		if strings.HasSuffix(m, "(") || promKeywords[strings.ToLower(m)] {
			continue // a function or aggregation, or a keyword
		}
		names = append(names, m)
	}
	return names
}

func TestPromMetrics(t *testing.T) {
	tests := []struct {
		expr string
		want []string
	}{
		{`up{job="listingproxy"} == 0`, []string{"up"}},
		{`sum by (le, route) (rate(a_bucket{x=~"$i", route="/{country}/x"}[$__rate_interval])) / on (job) group_left b > 0.5`, []string{"a_bucket", "b"}},
		{`histogram_quantile(0.99, sum without(instance) (rate(c_bucket[5m])))`, []string{"c_bucket"}},
		{`time() - max(d) and e unless f offset 1h30m or g`, []string{"d", "e", "f", "g"}},
		{`1e3 * count(h:recorded:rate5m) > bool 2`, []string{"h:recorded:rate5m"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, promMetrics(tt.expr)); diff != "" {
			t.Errorf("promMetrics(%q) (-want +got):\n%s", tt.expr, diff)
		}
	}
}

// exportedMetrics scrapes h's /metrics and returns each family's type, and
// the exposition.
func exportedMetrics(t *testing.T, h http.Handler) (map[string]string, string) {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	if w.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d", w.Code)
	}
	text := w.Body.String()
	types := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			types[f[2]] = f[3]
		}
	}
	return types, text
}

// wantMetrics fetches the admin listener's /metrics with client and
// reports each of want (a line of the exposition) that it lacks; context
// says when.
func wantMetrics(t *testing.T, client *http.Client, admin, context string, want ...string) {
	t.Helper()
	resp, err := client.Get(admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, w := range want {
		if !strings.Contains(string(text), w) {
			t.Error(strings.TrimSpace(context + " /metrics lacks " + w))
		}
	}
}

// exports reports whether name is a series of an exported family: the
// family itself, or a histogram's or summary's _bucket, _sum or _count.
func exports(types map[string]string, name string) bool {
	if types[name] != "" {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		if ok && (types[base] == "histogram" || (types[base] == "summary" && suffix != "_bucket")) {
			return true
		}
	}
	return false
}

// dashboardQueries returns every PromQL query of a Grafana dashboard:
// panel targets, annotations, and the metric of label_values() template
// queries.
func dashboardQueries(t *testing.T, path string) []string {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID    string `json:"uid"`
		Title  string `json:"title"`
		Panels []struct {
			ID      int    `json:"id"`
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Annotations struct {
			List []struct {
				Expr string `json:"expr"`
			} `json:"list"`
		} `json:"annotations"`
		Templating struct {
			List []struct {
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(src, &d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if d.UID == "" || d.Title == "" {
		t.Errorf("%s: uid %q, title %q: an importable dashboard needs both", path, d.UID, d.Title)
	}
	var queries []string
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("%s: panel id %d used twice", path, p.ID)
		}
		ids[p.ID] = true
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("%s: panel %q has no query", path, p.Title)
		}
		for _, tg := range p.Targets {
			queries = append(queries, tg.Expr)
		}
	}
	for _, a := range d.Annotations.List {
		queries = append(queries, a.Expr)
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(map[string]any)
		s, _ := q["query"].(string)
		m := labelValues.FindStringSubmatch(s)
		if m == nil {
			t.Errorf("%s: template query %q is not label_values(metric, label)", path, s)
			continue
		}
		queries = append(queries, m[1])
	}
	return queries
}

// ruleQueries returns the expression of every rule of a Prometheus rule
// file.
func ruleQueries(t *testing.T, path string) []string {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Rules []struct {
				Alert, Record, Expr string
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(src, &f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var queries []string
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			queries = append(queries, r.Expr)
		}
	}
	return queries
}

// deployFamilies wires the demo with a failing CRM tenant (both change
// feeds, a rate-limited tenant), exercises it (hits, misses, the CRM's
// breaker opening, an unknown parameter, a criteria error, a purge), and
// returns it, the type of every family it exports, and its exposition.
// The families only other configurations register (cache.shared,
// cache.disk, cache.warm, the public listener's connection limits and
// HTTP/2 guard) are added from registries of their own, registered as
// the wiring does.
func deployFamilies(t *testing.T) (*app, map[string]string, string) {
	t.Helper()
	crm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	defer crm.Close()
	// With both of the CRM's change feeds, so their series are exported.
	a := crmDemoApp(t, crm.URL, [2]string{"  harbour: {backend: demo}", "  harbour: {backend: demo, rate_limit: {requests_per_second: 1000}}"},
		[2]string{"upstream_password: summit-crm}", `upstream_password: summit-crm, webhook_secret: "0123456789abcdef"}`},
		[2]string{"timeout: 5s}", "timeout: 5s, poll_interval: 1h}"})
	for range 2 {
		demoGet(t, a.handler, "harbour", "/au/properties.json?limit=2")
	}
	for i := range 3 {
		demoGet(t, a.handler, "summit", "/au/agents.json?limit="+string(rune('1'+i)))
	}
	demoGet(t, a.handler, "harbour", "/au/properties.json?limit=3&statuss=current") // an unknown parameter (not a hit of limit=2)
	demoGet(t, a.handler, "harbour", "/au/properties.json?bedrooms=many")           // a criteria error
	purge := httptest.NewRequest("POST", "/cache/purge?tenant=harbour", nil)
	purge.SetBasicAuth("admin", "admin-demo")
	w := httptest.NewRecorder()
	a.admin.ServeHTTP(w, purge)
	if w.Code != http.StatusOK {
		t.Fatalf("purge: %d %s", w.Code, w.Body)
	}
	types, text := exportedMetrics(t, a.admin)
	// The shared tier's families, exported with cache.shared (which this
	// service has not): registered as sharedTier does.
	sharedReg := prometheus.NewRegistry()
	sm := telemetry.NewSharedCacheMetrics()
	if err := sm.Register(sharedReg, func() redistier.Stats { return redistier.Stats{} }); err != nil {
		t.Fatal(err)
	}
	sm.Observe("get", time.Millisecond, nil) // the histogram's family is exported once it has a series
	sharedTypes, _ := exportedMetrics(t, promhttp.HandlerFor(sharedReg, promhttp.HandlerOpts{}))
	maps.Copy(types, sharedTypes)
	// Likewise the disk tier's, exported with cache.disk.
	diskReg := prometheus.NewRegistry()
	dm, err := telemetry.NewMetrics(diskReg)
	if err != nil {
		t.Fatal(err)
	}
	dm.WatchDiskCache(func() disktier.Stats { return disktier.Stats{} })
	// And the public listener's and the warm-up's, exported by serve and
	// with cache.warm.
	dm.WatchHTTP2Guard(func() uint64 { return 0 })
	dm.WatchConnLimit(func() (uint64, uint64) { return 0, 0 })
	dm.WatchWarm(func() (uint64, uint64, uint64) { return 0, 0, 0 })
	if err := dm.Err(); err != nil {
		t.Fatal(err)
	}
	diskTypes, _ := exportedMetrics(t, promhttp.HandlerFor(diskReg, promhttp.HandlerOpts{}))
	maps.Copy(types, diskTypes)
	return a, types, text
}

// TestDeployQueriesNameExportedMetrics exercises the service (hits, misses,
// a failing CRM tenant whose breaker opens, a purge, a tenant with a rate
// limit), scrapes its /metrics, and checks that every metric the shipped
// Grafana dashboard and Prometheus alert rules read is one it exports (so
// a renamed metric cannot leave a panel or an alert silently empty).
func TestDeployQueriesNameExportedMetrics(t *testing.T) {
	a, types, text := deployFamilies(t)
	for _, want := range []string{
		`listingproxy_cache_purges_total{kind="tenant",mode="soft",source="admin"} 1`,
		`listingproxy_tenant_requests_total{backend="demo",cache="hit",tenant="harbour"} 1`,
		`listingproxy_tenant_server_errors_total{backend="legacy",tenant="summit"} 3`,
		`listingproxy_breaker_state{backend="legacy",state="open",tenant="summit"} 1`,
		`listingproxy_unknown_params_total{param="other",tenant="harbour"} 1`,
		`listingproxy_criteria_errors_total{param="bedrooms",tenant="harbour"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if ev := a.metrics.RecentEvents(); len(ev) != 1 || ev[0].Kind != "purge" || !strings.Contains(ev[0].Detail, "tenant=harbour") {
		t.Errorf("recent events %+v, want the admin purge", ev)
	}

	dashboards, _ := filepath.Glob("../../deploy/grafana/*.json")
	rules, _ := filepath.Glob("../../deploy/prometheus/*-rules.yml")
	if len(dashboards) == 0 || len(rules) == 0 {
		t.Fatalf("dashboards %v, rule files %v: want at least one of each under deploy/", dashboards, rules)
	}
	check := func(path string, queries []string, synthetic ...string) {
		seen := map[string]bool{}
		for _, q := range queries {
			names := promMetrics(q)
			if len(names) == 0 {
				t.Errorf("%s: query %q reads no metric", path, q)
			}
			for _, n := range names {
				seen[n] = true
				if !exports(types, n) && !slices.Contains(synthetic, n) {
					t.Errorf("%s: query %q reads %s, which listingproxy does not export", path, q, n)
				}
			}
		}
		if len(seen) < 8 {
			t.Errorf("%s reads only %d metrics: %v", path, len(seen), seen)
		}
	}
	for _, p := range dashboards {
		check(p, dashboardQueries(t, p))
	}
	for _, p := range rules {
		check(p, ruleQueries(t, p), "up") // up: Prometheus's own series per scrape target
	}
}
