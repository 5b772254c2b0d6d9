package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"listingproxy/config"
	"listingproxy/internal/testkit"
	"listingproxy/upstream"
	"listingproxy/upstream/breaker"
)

func adminGet(t *testing.T, a *app, path string) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	a.admin.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
	return w
}

// tripBreaker opens the demo backend's backend-wide breaker: n calls of
// tenant harbour through its breakers fail as a backend refusing
// connections does (a refused dial counts for the backend whoever calls).
func tripBreaker(t *testing.T, a *app, n int) {
	t.Helper()
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	down := upstream.Wrap(nil, func(context.Context, upstream.Call, func(context.Context) error) error { return refused })
	b := a.breakers.Wrap(down, breaker.Backend{Name: "demo"}) // shares demo's breakers
	for range n {
		if _, err := b.GetAgent(context.Background(), upstream.Scope{Tenant: "harbour", Country: "au"}, 1); err == nil {
			t.Fatal("a refused call succeeded")
		}
	}
}

// TestOneTenantsFailuresStayItsOwn, on the wired demo (SQLite): harbour's
// calls to the demo backend time out until its breaker opens; harbour then
// gets 503 with the breaker's Retry-After on a cold URL, while summit, on
// the same backend, is served by it.
func TestOneTenantsFailuresStayItsOwn(t *testing.T) {
	a := newDemoApp(t)
	timeout := fmt.Errorf("sqlstore: list properties: %w", context.DeadlineExceeded)
	slow := upstream.Wrap(nil, func(context.Context, upstream.Call, func(context.Context) error) error { return timeout })
	b := a.breakers.Wrap(slow, breaker.Backend{Name: "demo"}) // shares demo's breakers
	for range breaker.DefaultConsecutiveFailures {
		if _, err := b.GetAgent(context.Background(), upstream.Scope{Tenant: "harbour", Country: "au"}, 1); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("harbour's slow call = %v, want its timeout", err)
		}
	}
	if got := breakerState(t, a, "harbour"); got != "open" {
		t.Fatalf("harbour's breaker: %s, want open", got)
	}
	if got := breakerState(t, a, ""); got != "closed" {
		t.Fatalf("demo's backend-wide breaker: %s, want closed (one tenant's timeouts)", got)
	}
	w := demoGet(t, a.handler, "harbour", "/au/properties.json?limit=3")
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "15" {
		t.Errorf("harbour while its breaker is open: %d, Retry-After %q; want 503, 15", w.Code, w.Header().Get("Retry-After"))
	}
	if w := demoGet(t, a.handler, "summit", "/au/properties.json?limit=3"); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"property":[`) {
		t.Errorf("summit, same backend: %d %.200s; want 200 with properties", w.Code, w.Body)
	}
}

// breakerState is the state of the demo backend's breaker for tenant (""
// for the backend-wide one).
func breakerState(t *testing.T, a *app, tenant string) string {
	t.Helper()
	for _, st := range a.breakers.States() {
		if st.Backend == "demo" && st.Tenant == tenant {
			return st.State.String()
		}
	}
	t.Fatalf("no breaker demo/%s", tenant)
	return ""
}

// TestMetricsFamilies scrapes /metrics after a miss, a hit, a failed login
// and a breaker trip, and finds every family with its labels.
// TestDuplicateFamilyFails: a family the registry holds already fails
// build with an error naming it, rather than a service whose /metrics
// lacks it.
func TestDuplicateFamilyFails(t *testing.T) {
	cfg, err := config.Load(demoConfig(t), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "listingproxy_lists_capped_total", Help: "taken"}))
	a, err := buildWith(context.Background(), cfg, deps{log: slog.New(slog.DiscardHandler), now: time.Now, registry: reg})
	if err == nil {
		a.Close()
		t.Fatal("build succeeded with listingproxy_lists_capped_total registered twice")
	}
	if !strings.Contains(err.Error(), "metrics: listingproxy_lists_capped_total: ") {
		t.Errorf("build: %v, want the metrics error naming the family", err)
	}
}

func TestMetricsFamilies(t *testing.T) {
	a := newDemoApp(t)
	demoGet(t, a.handler, "harbour", "/au/properties.json?limit=2")
	demoGet(t, a.handler, "harbour", "/au/properties.json?limit=2")
	demoGet(t, a.handler, "", "/au/properties.json?limit=2")
	tripBreaker(t, a, 5)

	w := adminGet(t, a, "/metrics")
	if w.Code != 200 {
		t.Fatalf("/metrics status %d", w.Code)
	}
	text := w.Body.String()
	for _, want := range []string{
		`listingproxy_http_requests_total{method="GET",route="/{country}/properties.json",status="200"} 2`,
		`listingproxy_http_requests_total{method="GET",route="/{country}/properties.json",status="401"} 1`,
		`listingproxy_http_request_duration_seconds_bucket{method="GET",route="/{country}/properties.json",le="0.005"}`,
		`listingproxy_auth_failures_total 1`,
		`listingproxy_cache_lookups_total{outcome="hit"} 1`,
		`listingproxy_cache_lookups_total{outcome="miss"} 1`,
		`listingproxy_cache_lookups_total{outcome="stale"} 0`,
		`listingproxy_cache_bytes `,
		`listingproxy_cache_max_bytes 2.68435456e+08`,
		`listingproxy_cache_entries 1`,
		`listingproxy_cache_evictions_total 0`,
		`listingproxy_cache_admission_rejects_total `,
		`listingproxy_cache_coalesced_waiters_total 0`,
		`listingproxy_cache_loader_calls_total 1`,
		`listingproxy_cache_errors_total 0`,
		`listingproxy_breaker_state{backend="demo",state="open",tenant=""} 1`,
		`listingproxy_breaker_state{backend="demo",state="closed",tenant=""} 0`,
		`listingproxy_breaker_state{backend="demo",state="open",tenant="harbour"} 1`,
		`listingproxy_breaker_state{backend="demo",state="closed",tenant="summit"} 1`,
		`listingproxy_breaker_transitions_total{backend="demo",from="closed",tenant="",to="open"} 1`,
		`listingproxy_breaker_transitions_total{backend="demo",from="open",tenant="",to="half-open"} 0`,
		`listingproxy_breaker_transitions_total{backend="demo",from="closed",tenant="summit",to="open"} 0`,
		`listingproxy_breaker_last_success_timestamp_seconds{backend="demo",tenant="harbour"} 1.7952192e+09`,
		`listingproxy_breaker_last_failure_timestamp_seconds{backend="demo",tenant=""} 1.7952192e+09`,
		`listingproxy_backend_ready{backend="demo"} 1`,
		`listingproxy_bulkhead_slots{backend="demo",tenant="harbour"} 2`,
		`listingproxy_bulkhead_in_flight{backend="demo",tenant="harbour"} 0`,
		`listingproxy_backend_request_duration_seconds_count{backend="demo",operation="ListProperties"} 1`,
		`listingproxy_backend_errors_total{backend="demo",operation="ListProperties",reason="timeout"} 0`,
		`go_goroutines `,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if w := demoGet(t, a.handler, "", "/metrics"); w.Code == 200 {
		t.Error("/metrics is served on the public listener")
	}
}

// TestReadyzIgnoresBreakers: readiness means "can serve"; an open breaker
// does not make the process unready (it still serves stale bodies and other
// backends' tenants), the drain does.
func TestReadyzIgnoresBreakers(t *testing.T) {
	a := newDemoApp(t)
	if w := adminGet(t, a, "/readyz"); w.Code != 200 {
		t.Fatalf("/readyz before: %d %s", w.Code, w.Body)
	}
	tripBreaker(t, a, 5)
	if w := adminGet(t, a, "/readyz"); w.Code != 200 {
		t.Errorf("/readyz with an open breaker: %d %q, want 200", w.Code, w.Body)
	}
	a.draining.Start()
	if w := adminGet(t, a, "/readyz"); w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "draining") {
		t.Errorf("/readyz while draining: %d %q, want 503 saying draining", w.Code, w.Body)
	}
	if w := adminGet(t, a, "/healthz"); w.Code != 200 {
		t.Errorf("/healthz while draining: %d, want 200 (the process is alive)", w.Code)
	}
}

// TestCRMCallsCarryTraceparent wires a CRM backend at an httptest server
// with tracing on: the request it receives carries the trace's traceparent.
func TestCRMCallsCarryTraceparent(t *testing.T) {
	got := make(chan string, 10)
	crmSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Traceparent")
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	defer crmSrv.Close()
	src, err := os.ReadFile("../../config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	yaml := strings.Replace(string(src), `  demo:
    kind: sqlite
    dsn: "file:listingproxy-demo.db"
    seed_demo: true             # create and fill the demo database on first start`, `  demo:
    kind: crm
    url: "`+crmSrv.URL+`"`, 1)
	yaml = strings.Replace(yaml, "harbour: {backend: demo}", "harbour: {backend: demo, upstream_username: hb, upstream_password: pw}", 1)
	yaml = strings.Replace(yaml, "summit:  {backend: demo}", "summit:  {backend: demo, upstream_username: sm, upstream_password: pw}", 1)
	cfg, err := config.Parse("crm.yaml", []byte(yaml), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	a, err := buildWith(context.Background(), cfg, deps{log: slog.New(slog.DiscardHandler), now: time.Now, tracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	r := httptest.NewRequest("GET", "/au/properties/1.xml", nil)
	r.SetBasicAuth("harbour", "harbour-demo")
	r.Header.Set("Traceparent", parent)
	a.handler.ServeHTTP(httptest.NewRecorder(), r)
	select {
	case tp := <-got:
		if !strings.HasPrefix(tp, "00-4bf92f3577b34da6a3ce929d0e0e4736-") || tp == parent {
			t.Errorf("CRM got traceparent %q, want a child in trace 4bf92f35…", tp)
		}
	default:
		t.Fatal("the CRM was never called")
	}
	var names []string
	for _, s := range exp.GetSpans() {
		names = append(names, s.Name)
	}
	for _, want := range []string{"HTTP GET", "backend.GetProperty", "breaker", "cache.fill", "cache.lookup", "GET /{country}/properties/{file}"} {
		if !strings.Contains(strings.Join(names, ","), want) {
			t.Errorf("spans %v lack %s", names, want)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRunReloadsOnSIGHUPAndFlushesOnShutdown runs the service with the
// stdout exporter, reloads a changed and then a broken config with SIGHUP,
// and stops it: run returns nil and the request's spans were flushed.
func TestRunReloadsOnSIGHUPAndFlushesOnShutdown(t *testing.T) {
	path := demoConfig(t)
	orig, _ := os.ReadFile(path)
	traced := strings.Replace(string(orig), "exporter: none ", "exporter: stdout", 1)
	if err := os.WriteFile(path, []byte(traced), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- serveWith(ctx, []string{"listingproxy", "-config", path}, func(string) string { return "" }, &stdout, &stderr, drainAtOnce)
	}()
	var base, admin string
	testkit.WaitFor(t, "run prints where it listens", func() bool {
		m := listenLine.FindStringSubmatch(stdout.String())
		if m != nil {
			base, admin = m[1], m[2]
		}
		return m != nil
	})
	client := &http.Client{Transport: &http.Transport{}}
	status := func(user, pass string) int {
		req, _ := http.NewRequest("GET", base+"/au/properties.json?limit=1", nil)
		req.SetBasicAuth(user, pass)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := status("harbour", "harbour-demo"); got != 200 {
		t.Fatalf("harbour before reload: %d", got)
	}

	// Drop the harbour user: after SIGHUP it is refused, summit still works.
	dropped := strings.Replace(traced, `  - {username: harbour,         password_bcrypt`, `  # - {username: harbour,         password_bcrypt`, 1)
	if err := os.WriteFile(path, []byte(dropped), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the reload drops user harbour", func() bool { return status("harbour", "harbour-demo") == 401 })
	if got := status("summit", "summit-demo"); got != 200 {
		t.Errorf("summit after reload: %d", got)
	}

	// A broken file is rejected with its reason; the running config stays.
	if err := os.WriteFile(path, []byte(dropped+"\nnot_a_key: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the broken reload is logged", func() bool {
		return strings.Contains(stderr.String(), "config reload rejected") && strings.Contains(stderr.String(), "not_a_key")
	})
	if got := status("summit", "summit-demo"); got != 200 {
		t.Errorf("summit after a rejected reload: %d", got)
	}
	wantMetrics(t, client, admin, "after one good and one rejected reload,",
		`listingproxy_config_reloads_total{result="success"} 1`,
		`listingproxy_config_reloads_total{result="failure"} 1`,
		`listingproxy_config_last_reload_successful 0`,
	)

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run = %v after shutdown, want nil", err)
	}
	if out := stdout.String(); !strings.Contains(out, `"Name":"GET /{country}/properties.json"`) {
		t.Errorf("the server spans were not flushed to stdout at shutdown:\n%.2000s", out)
	}
	logs := stderr.String()
	if !strings.Contains(logs, `"msg":"request"`) || !strings.Contains(logs, `"route":"/{country}/properties.json"`) || !strings.Contains(logs, `"trace_id":"`) {
		t.Errorf("no access line with route and trace id in the log:\n%.2000s", logs)
	}
	if !strings.Contains(logs, `"path":"/au/properties.json?limit=1"`) {
		t.Errorf("no access line with the path and query in the log:\n%.2000s", logs)
	}
	for _, leak := range []string{"harbour-demo", "summit-demo", "Basic "} {
		if strings.Contains(logs, leak) {
			t.Errorf("log carries %q", leak)
		}
	}
}

// TestReloadBreakersAndRestartKeys: unchanged breaker settings keep the
// breakers (an open one stays open); changed ones replace them; keys that
// need a restart are reported, not applied.
func TestReloadBreakersAndRestartKeys(t *testing.T) {
	a := newDemoApp(t)
	tripBreaker(t, a, 5)
	same := *a.cfg
	same.Users = a.cfg.Users[1:]
	if restart, err := a.reload(&same); err != nil || len(restart) != 0 {
		t.Fatalf("reload = %v, %v; want no restart keys, no error", restart, err)
	}
	if got := breakerState(t, a, ""); got != "open" {
		t.Errorf("after a reload with unchanged breaker settings: %s, want still open", got)
	}
	changed := *a.cfg
	changed.Breaker.Failures = 2
	changed.Listen = "127.0.0.1:1"
	changed.MaxOffset = 10
	restart, err := a.reload(&changed)
	if err != nil || strings.Join(restart, ",") != "listen,max_offset" {
		t.Fatalf("reload = %v, %v; want restart keys [listen max_offset]", restart, err)
	}
	if got := breakerState(t, a, ""); got != "closed" {
		t.Fatalf("after a reload with changed breaker settings: %s, want a fresh closed breaker", got)
	}
	tripBreaker(t, a, 2)
	if got := breakerState(t, a, ""); got != "open" {
		t.Errorf("new breaker after 2 failures: %s, want open (failures: 2 applied)", got)
	}
	if a.cfg.Listen == "127.0.0.1:1" || a.cfg.MaxOffset == 10 {
		t.Error("the running config records a listen address or max_offset that was not applied")
	}
	if body := demoGet(t, a.handler, "harbour", "/au/properties.json?offset=11&limit=1").Body.String(); strings.Contains(body, `"errors"`) {
		t.Errorf("max_offset applied by a reload that needs a restart: %s", body)
	}
}

// TestDemoMissTrace: on the SQL demo, a miss's backend span has the
// store's per-statement spans (sql.<statement>) beneath it.
func TestDemoMissTrace(t *testing.T) {
	cfg, err := config.Load(demoConfig(t), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	a, err := buildWith(context.Background(), cfg, deps{log: slog.New(slog.DiscardHandler), now: func() time.Time { return goldenNow }, tracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	exp.Reset() // seeding
	demoGet(t, a.handler, "harbour", "/au/properties.json?limit=2")
	byID := map[string]string{}
	for _, s := range exp.GetSpans() {
		byID[s.SpanContext.SpanID().String()] = s.Name
	}
	sql := 0
	for _, s := range exp.GetSpans() {
		if strings.HasPrefix(s.Name, "sql.") {
			sql++
			if p := byID[s.Parent.SpanID().String()]; p != "backend.ListProperties" {
				t.Errorf("%s is a child of %q, want backend.ListProperties", s.Name, p)
			}
		}
	}
	if sql == 0 {
		t.Error("no sql.* statement spans under the backend span")
	}
}
