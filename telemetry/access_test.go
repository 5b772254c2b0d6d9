package telemetry_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus"

	"listingproxy/telemetry"
)

// accessLine serves one request through Middleware (with trusted proxies
// 10.0.0.0/8) and returns its access line and response.
func accessLine(t *testing.T, r *http.Request, note telemetry.Annotation) (map[string]any, *httptest.ResponseRecorder) {
	t.Helper()
	var logs bytes.Buffer
	h := telemetry.Middleware(telemetry.AccessOptions{
		Logger:         slog.New(slog.NewJSONHandler(&logs, nil)),
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
	})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		telemetry.Annotate(w, note)
		w.WriteHeader(http.StatusOK)
	}))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var line map[string]any
	if err := json.Unmarshal(logs.Bytes(), &line); err != nil {
		t.Fatalf("access line %q: %v", logs.String(), err)
	}
	return line, w
}

var generatedID = regexp.MustCompile(`^[0-9a-f]{32}$`)

func TestAccessLineRequestIDAndClient(t *testing.T) {
	tests := []struct {
		name       string
		peer       string
		header     map[string]string
		wantID     string // "" : a generated one
		wantClient string
	}{
		{"direct client: its id is replaced", "192.0.2.7:5000",
			map[string]string{"X-Request-Id": "forged-1", "X-Forwarded-For": "203.0.113.9"}, "", "192.0.2.7"},
		{"trusted proxy: its id and forwarded client kept", "10.1.2.3:443",
			map[string]string{"X-Request-Id": "lb-7f3a-01", "X-Forwarded-For": "203.0.113.9, 10.9.9.9"}, "lb-7f3a-01", "203.0.113.9"},
		{"trusted proxy without an id: generated", "10.1.2.3:443",
			map[string]string{"X-Forwarded-For": "203.0.113.9"}, "", "203.0.113.9"},
		{"trusted proxy with a malformed id: generated", "10.1.2.3:443",
			map[string]string{"X-Request-Id": "bad id\"with quotes"}, "", "10.1.2.3"},
		{"trusted proxy with an overlong id: generated", "10.1.2.3:443",
			map[string]string{"X-Request-Id": strings.Repeat("a", 129)}, "", "10.1.2.3"},
		{"IPv6 peer", "[2001:db8::5]:9000", nil, "", "2001:db8::5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/au/properties.xml", nil)
			r.RemoteAddr = tt.peer
			for k, v := range tt.header {
				r.Header.Set(k, v)
			}
			line, w := accessLine(t, r, telemetry.Annotation{})
			id := w.Header().Get("X-Request-Id")
			if tt.wantID != "" && id != tt.wantID {
				t.Errorf("response X-Request-Id = %q, want %q", id, tt.wantID)
			}
			if tt.wantID == "" && !generatedID.MatchString(id) {
				t.Errorf("response X-Request-Id = %q, want a generated 32-hex id", id)
			}
			if line["request_id"] != id {
				t.Errorf("access line request_id = %v, want the response's %q", line["request_id"], id)
			}
			if line["client"] != tt.wantClient {
				t.Errorf("client = %v, want %s", line["client"], tt.wantClient)
			}
		})
	}
}

// Fresh ids are made 64 at a time and handed out from a pool: requests on
// several goroutines, across many batches, must still each get an id of
// their own, as a header value that appending to cannot spill into
// another response's id.
func TestGeneratedRequestIDsDiffer(t *testing.T) {
	const workers, each = 4, 300
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				_, w := accessLine(t, httptest.NewRequest("GET", "/", nil), telemetry.Annotation{})
				v := w.Header()["X-Request-Id"]
				if len(v) != 1 || cap(v) != 1 {
					t.Errorf("X-Request-Id value %q has len %d, cap %d; want 1, 1", v, len(v), cap(v))
					return
				}
				if !generatedID.MatchString(v[0]) {
					t.Errorf("X-Request-Id = %q, want a generated 32-hex id", v[0])
				}
				mu.Lock()
				if seen[v[0]] {
					t.Errorf("request id %s generated twice", v[0])
				}
				seen[v[0]] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != workers*each {
		t.Errorf("%d distinct ids for %d requests", len(seen), workers*each)
	}
}

func TestAccessLinePathNeverCarriesCredentials(t *testing.T) {
	tests := []struct {
		name, target, want string
	}{
		{"query kept", "/au/properties.xml?suburb=Manly&limit=2", "/au/properties.xml?suburb=Manly&limit=2"},
		{"password redacted", "/au/properties.xml?suburb=Manly&password=hunter2", "/au/properties.xml?suburb=Manly&password=REDACTED"},
		{"token redacted, any case and escaping", "/au/agents.json?Access_Token=zqtok&%70assword=x&limit=1",
			"/au/agents.json?Access_Token=REDACTED&%70assword=REDACTED&limit=1"},
		{"a value that looks like a word is kept", "/au/agents.json?name=token", "/au/agents.json?name=token"},
		{"userinfo of an absolute target dropped", "http://harbour:harbour-demo@example.com/au/agents.json?limit=1", "/au/agents.json?limit=1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line, _ := accessLine(t, httptest.NewRequest("GET", tt.target, nil), telemetry.Annotation{})
			if line["path"] != tt.want {
				t.Errorf("path = %v, want %s", line["path"], tt.want)
			}
			for _, secret := range []string{"hunter2", "harbour-demo", "zqtok"} { // none is hex: the random request id must not match by chance
				raw, _ := json.Marshal(line)
				if strings.Contains(string(raw), secret) {
					t.Errorf("access line carries %q: %s", secret, raw)
				}
			}
		})
	}
}

func TestAccessLineCaller(t *testing.T) {
	line, _ := accessLine(t, httptest.NewRequest("GET", "/au/agents/7.json", nil),
		telemetry.Annotation{Tenant: "harbour", Backend: "demo", User: "harbour-ops", Cache: "stale"})
	got := map[string]any{"tenant": line["tenant"], "user": line["user"], "cache": line["cache"]}
	want := map[string]any{"tenant": "harbour", "user": "harbour-ops", "cache": "stale"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("caller fields (-want +got):\n%s", diff)
	}
}

// fakeTimers collects ErrorDigest's scheduled flushes, for the test to fire.
type fakeTimers struct {
	due []time.Duration
	fns []func()
}

func (f *fakeTimers) afterFunc(d time.Duration, fn func()) {
	f.due, f.fns = append(f.due, d), append(f.fns, fn)
}

func (f *fakeTimers) fire(t *testing.T) {
	t.Helper()
	if len(f.fns) == 0 {
		t.Fatal("no flush scheduled")
	}
	fn := f.fns[0]
	f.fns, f.due = f.fns[1:], f.due[1:]
	fn()
}

type digestLine struct {
	Backend    string `json:"backend"`
	Count      int    `json:"count"`
	LastStatus int    `json:"last_status"`
	LastError  string `json:"last_error"`
	Total      int    `json:"total"`
}

func digestLines(t *testing.T, logs *bytes.Buffer) []digestLine {
	t.Helper()
	var out []digestLine
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if l == "" {
			continue
		}
		var d digestLine
		if err := json.Unmarshal([]byte(l), &d); err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	logs.Reset()
	return out
}

// TestErrorDigest: an outage of many failing requests writes one line at
// once, then one per interval with the count, per backend.
func TestErrorDigest(t *testing.T) {
	var logs bytes.Buffer
	now := time.Date(2026, 11, 22, 20, 0, 0, 0, time.UTC)
	timers := &fakeTimers{}
	d := telemetry.NewErrorDigest(telemetry.DigestOptions{
		Logger: slog.New(slog.NewJSONHandler(&logs, nil)), Interval: 10 * time.Second,
		Now: func() time.Time { return now }, AfterFunc: timers.afterFunc,
	})
	refused := errors.New("crm: dial tcp: connection refused")

	d.Record("crm", 503, refused)
	if diff := cmp.Diff([]digestLine{{"crm", 1, 503, refused.Error(), 1}}, digestLines(t, &logs)); diff != "" {
		t.Errorf("first failure (-want +got):\n%s", diff)
	}
	for range 500 {
		now = now.Add(time.Millisecond)
		d.Record("crm", 503, refused)
	}
	d.Record("sql", 503, errors.New("circuit breaker open"))
	if diff := cmp.Diff([]digestLine{{"sql", 1, 503, "circuit breaker open", 1}}, digestLines(t, &logs)); diff != "" {
		t.Errorf("during the interval (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]time.Duration{10*time.Second - 1*time.Millisecond}, timers.due); diff != "" {
		t.Errorf("scheduled flushes (-want +got):\n%s", diff)
	}
	now = now.Add(10 * time.Second)
	timers.fire(t)
	if diff := cmp.Diff([]digestLine{{"crm", 500, 503, refused.Error(), 501}}, digestLines(t, &logs)); diff != "" {
		t.Errorf("end of interval (-want +got):\n%s", diff)
	}
	// Still within the next quiet interval: counted, logged by Flush.
	d.Record("crm", 504, errors.New("timeout"))
	d.Flush()
	if diff := cmp.Diff([]digestLine{{"crm", 1, 504, "timeout", 502}}, digestLines(t, &logs)); diff != "" {
		t.Errorf("flush (-want +got):\n%s", diff)
	}
	got := d.Backends()
	if len(got) != 2 || got[0].Backend != "crm" || got[0].Errors != 502 || got[0].LastError != "timeout" || !got[0].LastAt.Equal(now) {
		t.Errorf("Backends() = %+v", got)
	}
}

// TestMiddlewareFeedsDigestAndTenants: a 5xx's failure reaches the digest
// (no line per request), and per-tenant counters follow cache outcomes.
func TestMiddlewareFeedsDigestAndTenants(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError}))
	timers := &fakeTimers{}
	digest := telemetry.NewErrorDigest(telemetry.DigestOptions{Logger: log, AfterFunc: timers.afterFunc})
	reg := prometheus.NewRegistry()
	m, err := telemetry.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	status := http.StatusOK
	var note telemetry.Annotation
	h := telemetry.Middleware(telemetry.AccessOptions{Logger: log, Metrics: m, Errors: digest})(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			telemetry.Annotate(w, note)
			w.WriteHeader(status)
		}))
	serve := func(n telemetry.Annotation, code int) {
		note, status = n, code
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/au/properties.xml", nil))
	}
	down := errors.New("connection refused")
	serve(telemetry.Annotation{Tenant: "harbour", Backend: "demo", Cache: "hit"}, 200)
	serve(telemetry.Annotation{Tenant: "harbour", Backend: "demo", Cache: "stale-if-error"}, 200)
	serve(telemetry.Annotation{Tenant: "harbour", Backend: "demo"}, 200)
	for range 3 {
		serve(telemetry.Annotation{Tenant: "summit", Backend: "crm", Cache: "miss", Err: down}, 503)
	}
	serve(telemetry.Annotation{AuthFailed: true}, 401)
	serve(telemetry.Annotation{Refused: true}, 429)
	serve(telemetry.Annotation{}, 404) // no tenant, not refused: not an API request the page counts
	serve(telemetry.Annotation{Tenant: "harbour", Backend: "demo", Invalid: true}, 200)
	serve(telemetry.Annotation{Tenant: "harbour", Backend: "demo"}, 404)
	serve(telemetry.Annotation{Tenant: "harbour", Backend: "demo"}, 429)

	if lines := digestLines(t, &logs); len(lines) != 1 || lines[0].Backend != "crm" || lines[0].Count != 1 {
		t.Errorf("error lines %+v, want the first crm failure only", lines)
	}
	want := []telemetry.TenantStats{
		{Tenant: "harbour", Backend: "demo", Requests: 6, Hits: 1, StaleIfError: 1, Uncached: 4, ClientErrors: 2, TooMany: 1, Invalid: 1},
		{Tenant: "summit", Backend: "crm", Requests: 3, Misses: 3, ServerErrors: 3},
	}
	noLatency := cmpopts.IgnoreFields(telemetry.TenantStats{}, "Latency", "Recent")
	if diff := cmp.Diff(want, m.Tenants(), noLatency); diff != "" {
		t.Errorf("Tenants() (-want +got):\n%s", diff)
	}
	for _, s := range m.Tenants() {
		if s.Latency.Count() != s.Requests || s.Recent.Count() != s.Requests {
			t.Errorf("%s: %d latencies (%d recent) for %d requests", s.Tenant, s.Latency.Count(), s.Recent.Count(), s.Requests)
		}
	}
	anonymous := telemetry.TenantStats{Requests: 2, Uncached: 2, ClientErrors: 2, Unauthorized: 1, TooMany: 1}
	if diff := cmp.Diff(anonymous, m.Unauthenticated(), noLatency); diff != "" {
		t.Errorf("Unauthenticated() (-want +got):\n%s", diff)
	}
	text := scrape(t, reg)
	for _, want := range []string{
		`listingproxy_tenant_requests_total{backend="demo",cache="hit",tenant="harbour"} 1`,
		`listingproxy_tenant_requests_total{backend="demo",cache="none",tenant="harbour"} 4`,
		`listingproxy_tenant_server_errors_total{backend="crm",tenant="summit"} 3`,
		`listingproxy_http_request_duration_seconds_bucket{method="GET",route="unmatched",le="5e-05"}`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestOperationalMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := telemetry.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Unix(1_800_000_000, 0)
	m.ConfigLoaded(start)
	m.ConfigReloaded(start.Add(time.Minute), nil)
	m.ConfigReloaded(start.Add(2*time.Minute), errors.New("c.yaml:3: users[0].tenant: unknown tenant"))
	m.Purged(start.Add(3*time.Minute), telemetry.Purge{Source: "admin", Kind: "tenant", Mode: "hard", Tenant: "harbour"})

	b := telemetry.ReadBuild()
	text := scrape(t, reg)
	for _, want := range []string{
		`listingproxy_build_info{commit="` + b.Commit + `",goversion="` + b.GoVersion + `",version="` + b.Version + `"} 1`,
		`listingproxy_config_reloads_total{result="success"} 1`,
		`listingproxy_config_reloads_total{result="failure"} 1`,
		`listingproxy_config_last_reload_successful 0`,
		`listingproxy_config_last_reload_success_timestamp_seconds 1.80000006e+09`,
		`listingproxy_cache_purges_total{kind="tenant",mode="hard",source="admin"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if !strings.HasPrefix(b.GoVersion, "go") {
		t.Errorf("ReadBuild().GoVersion = %q", b.GoVersion)
	}
	got := m.RecentEvents()
	want := []telemetry.Event{
		{Time: start.Add(3 * time.Minute), Kind: "purge", Detail: "source=admin kind=tenant mode=hard tenant=harbour"},
		{Time: start.Add(2 * time.Minute), Kind: "reload", Detail: "reload rejected; running configuration kept", Err: "c.yaml:3: users[0].tenant: unknown tenant"},
		{Time: start.Add(time.Minute), Kind: "reload", Detail: "configuration reloaded"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RecentEvents (-want +got):\n%s", diff)
	}
	for i := range 30 {
		m.Purged(start.Add(time.Duration(i)*time.Hour), telemetry.Purge{Source: "notify", Kind: "tenant", Mode: "hard"})
	}
	if n := len(m.RecentEvents()); n != 20 {
		t.Errorf("%d recent events kept, want 20", n)
	}
}

// TestHistogramQuantile: quantiles interpolate within their bucket, from 0
// for the first, and stop at the largest bound above them all.
func TestHistogramQuantile(t *testing.T) {
	h := telemetry.Histogram{Bounds: []float64{0.001, 0.01, 0.1}, Counts: []uint64{50, 0, 49, 1}}
	for _, c := range []struct{ q, want float64 }{
		{0.5, 0.001},              // the 50th of 100 is the first bucket's last
		{0.25, 0.0005},            // half-way through the first bucket
		{0.99, 0.1},               // the last of the third bucket
		{0.75, 0.01 + 0.09*25/49}, // within the third
		{1, 0.1},                  // in the overflow: the largest bound
	} {
		if got := h.Quantile(c.q); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if got := (telemetry.Histogram{Bounds: h.Bounds, Counts: make([]uint64, 4)}).Quantile(0.5); got != 0 {
		t.Errorf("empty: Quantile = %v, want 0", got)
	}
}

// TestFeeds: the status page's view of the change feeds follows what the
// feeds report, as their families do.
func TestFeeds(t *testing.T) {
	m, err := telemetry.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 27, 22, 0, 0, 0, time.UTC)
	m.FeedStarted("pg", "poll")
	m.FeedStarted("crm", "webhook")
	m.FeedHeld("crm", "webhook", true)
	m.FeedLive("crm", "webhook", nil, now)
	m.FeedChanged("crm", "webhook", false, now.Add(-2*time.Second), now.Add(time.Second))
	m.FeedChanged("crm", "webhook", true, time.Time{}, now.Add(2*time.Second))
	m.FeedHeld("pg", "poll", true)
	m.FeedLive("pg", "poll", errors.New("down"), now)
	want := []telemetry.FeedStats{
		{Backend: "crm", Feed: "webhook", Up: true, Held: true, Changes: 2, Gaps: 1, Lag: 3 * time.Second, LastEvent: now.Add(2 * time.Second)},
		{Backend: "pg", Feed: "poll", Held: true},
	}
	if diff := cmp.Diff(want, m.Feeds()); diff != "" {
		t.Errorf("Feeds() (-want +got):\n%s", diff)
	}
}

// TestMiddlewareSeriesPerMetrics: requests that alternate between two
// Middlewares with their own Metrics, two routes and two tenants (one
// after the other, so that the same pooled writer serves them all and its
// memo of the last series is tried each time) are each counted once, in
// their own Metrics, route and tenant.
func TestMiddlewareSeriesPerMetrics(t *testing.T) {
	type side struct {
		reg *prometheus.Registry
		m   *telemetry.Metrics
		h   http.Handler
	}
	var note telemetry.Annotation
	sides := make([]side, 2)
	for i := range sides {
		sides[i].reg = prometheus.NewRegistry()
		m, err := telemetry.NewMetrics(sides[i].reg)
		if err != nil {
			t.Fatal(err)
		}
		mux := http.NewServeMux()
		ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { telemetry.Annotate(w, note) })
		mux.Handle("GET /{country}/properties.xml", ok)
		mux.Handle("GET /{country}/agents.xml", ok)
		sides[i].m, sides[i].h = m, telemetry.Middleware(telemetry.AccessOptions{Metrics: m})(mux)
	}
	// side, route, tenant of each request, in order.
	reqs := []struct {
		side         int
		path, tenant string
	}{
		{0, "/au/properties.xml", "harbour"}, {0, "/au/properties.xml", "harbour"}, {1, "/au/properties.xml", "harbour"},
		{0, "/au/agents.xml", "harbour"}, {0, "/au/agents.xml", "summit"}, {1, "/au/agents.xml", "summit"},
		{0, "/au/properties.xml", "summit"}, {1, "/au/properties.xml", "harbour"}, {1, "/au/properties.xml", "summit"},
		{1, "/au/agents.xml", "summit"}, {1, "/au/properties.xml", "summit"}, {1, "/au/agents.xml", "harbour"},
	}
	type count struct {
		side          int
		route, tenant string
	}
	want := map[count]int{}
	tenants := map[[2]string]uint64{}
	for _, q := range reqs {
		note = telemetry.Annotation{Tenant: q.tenant, Backend: "demo", Cache: "hit"}
		sides[q.side].h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", q.path, nil))
		want[count{q.side, strings.TrimPrefix(q.path, "/au"), q.tenant}]++
		tenants[[2]string{strconv.Itoa(q.side), q.tenant}]++
	}
	for i, s := range sides {
		text := scrape(t, s.reg)
		for _, route := range []string{"/properties.xml", "/agents.xml"} {
			n := 0
			for _, tenant := range []string{"harbour", "summit"} {
				n += want[count{i, route, tenant}]
			}
			line := fmt.Sprintf(`listingproxy_http_requests_total{method="GET",route="/{country}%s",status="200"} %d`, route, n)
			if !strings.Contains(text, line+"\n") {
				t.Errorf("side %d lacks %s", i, line)
			}
		}
		got := map[string]uint64{}
		for _, st := range s.m.Tenants() {
			got[st.Tenant] = st.Requests
		}
		for _, tenant := range []string{"harbour", "summit"} {
			if w := tenants[[2]string{strconv.Itoa(i), tenant}]; got[tenant] != w {
				t.Errorf("side %d, tenant %s: %d requests, want %d", i, tenant, got[tenant], w)
			}
		}
	}
}
