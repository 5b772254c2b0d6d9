package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"listingproxy/normalize"
	"listingproxy/telemetry"
	"listingproxy/upstream"
)

func newProvider(t *testing.T) (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, exp
}

// TestTransportPropagatesTraceContext calls an httptest CRM through the
// traced transport: the CRM receives a W3C traceparent in the caller's
// trace and the full query, and the client span records no query.
func TestTransportPropagatesTraceContext(t *testing.T) {
	tp, exp := newProvider(t)
	var gotParent, gotQuery string
	crm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotParent, gotQuery = r.Header.Get("Traceparent"), r.URL.RawQuery
		io.WriteString(w, "<properties/>")
	}))
	defer crm.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: telemetry.Transport(base, tp)}

	ctx, parent := tp.Tracer("test").Start(context.Background(), "parent")
	req, _ := http.NewRequestWithContext(ctx, "GET", crm.URL+"/au/properties.xml?suburb=Manly&status=current", nil)
	req.SetBasicAuth("summit", "s3cret")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	parent.End()

	traceID := parent.SpanContext().TraceID().String()
	if !strings.HasPrefix(gotParent, "00-"+traceID+"-") {
		t.Errorf("CRM got traceparent %q, want one in trace %s", gotParent, traceID)
	}
	if gotQuery != "suburb=Manly&status=current" {
		t.Errorf("CRM got query %q, want it unchanged", gotQuery)
	}
	if req.URL.RawQuery != "suburb=Manly&status=current" {
		t.Errorf("caller's request was modified: query %q", req.URL.RawQuery)
	}
	var client0 *tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == "HTTP GET" {
			client0 = &s
		}
		for _, a := range s.Attributes {
			v := a.Value.String()
			if strings.Contains(v, "Manly") || strings.Contains(v, "s3cret") || strings.Contains(v, "Basic ") {
				t.Errorf("span %s attribute %s = %q leaks the query or credentials", s.Name, a.Key, v)
			}
		}
	}
	if client0 == nil {
		t.Fatalf("no HTTP client span among %d spans", len(exp.GetSpans()))
	}
	if !strings.HasSuffix(gotParent, "-"+client0.SpanContext.SpanID().String()+"-01") {
		t.Errorf("traceparent %q does not name the client span %s", gotParent, client0.SpanContext.SpanID())
	}
}

// TestMiddleware checks the access line, the metrics and the span name of
// one request through ServerHandler, Middleware and a ServeMux.
func TestMiddleware(t *testing.T) {
	tp, exp := newProvider(t)
	reg := prometheus.NewRegistry()
	m, err := telemetry.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{country}/agents/{file}", func(w http.ResponseWriter, r *http.Request) {
		telemetry.Annotate(w, telemetry.Annotation{Tenant: "harbour", Cache: "hit"})
		if err := http.NewResponseController(w).Flush(); err != nil { // reaches the recorder through Unwrap
			t.Errorf("Flush: %v", err)
		}
		io.WriteString(w, "hello")
	})
	mux.HandleFunc("GET /denied", func(w http.ResponseWriter, r *http.Request) {
		telemetry.Annotate(w, telemetry.Annotation{AuthFailed: true})
		w.WriteHeader(http.StatusUnauthorized)
	})
	h := telemetry.ServerHandler(telemetry.Middleware(telemetry.AccessOptions{Logger: log, Metrics: m, Tracing: true})(mux), tp)

	r := httptest.NewRequest("GET", "/au/agents/7.json?name=jane", nil)
	r.SetBasicAuth("harbour", "harbour-demo")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/denied", nil))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("BREW", "/nowhere", nil))

	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d access lines, want 3:\n%s", len(lines), logs.String())
	}
	var line map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &line); err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	want := map[string]any{"msg": "request", "method": "GET", "route": "/{country}/agents/{file}", "status": 200.0,
		"path": "/au/agents/7.json?name=jane", "bytes": 5.0, "cache": "hit", "tenant": "harbour", "client": "192.0.2.1",
		"request_id": w.Header().Get("X-Request-Id"), "trace_id": spans[0].SpanContext.TraceID().String()}
	for k, v := range want {
		if line[k] != v {
			t.Errorf("access line %s = %v, want %v", k, line[k], v)
		}
	}
	if _, ok := line["duration_ms"].(float64); !ok {
		t.Errorf("access line has no duration_ms: %s", lines[0])
	}
	for _, leak := range []string{"harbour-demo", "Basic", "Authorization"} {
		if strings.Contains(logs.String(), leak) {
			t.Errorf("access log carries %q:\n%s", leak, logs.String())
		}
	}
	if spans[0].Name != "GET /{country}/agents/{file}" {
		t.Errorf("server span named %q, want the route pattern", spans[0].Name)
	}

	text := scrape(t, reg)
	for _, want := range []string{
		`listingproxy_http_requests_total{method="GET",route="/{country}/agents/{file}",status="200"} 1`,
		`listingproxy_http_requests_total{method="GET",route="/denied",status="401"} 1`,
		`listingproxy_http_requests_total{method="OTHER",route="unmatched",status="404"} 1`,
		`listingproxy_http_request_duration_seconds_count{method="GET",route="/{country}/agents/{file}"} 1`,
		`listingproxy_auth_failures_total 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func scrape(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	w := httptest.NewRecorder()
	promhttpHandler(reg).ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	return w.Body.String()
}

// errBackend fails every call with err.
type errBackend struct{ err error }

func (b errBackend) ListProperties(context.Context, upstream.Scope, normalize.Criteria) ([]upstream.Property, error) {
	return nil, b.err
}
func (b errBackend) GetProperty(context.Context, upstream.Scope, int64) (upstream.Property, error) {
	return upstream.Property{}, b.err
}
func (b errBackend) ListAgents(context.Context, upstream.Scope, normalize.Criteria) ([]upstream.Agent, error) {
	return nil, b.err
}
func (b errBackend) GetAgent(context.Context, upstream.Scope, int64) (upstream.Agent, error) {
	return upstream.Agent{}, b.err
}

func TestInstrumentBackend(t *testing.T) {
	tests := []struct {
		name, reason string
		err          error
	}{
		{"ok", "", nil},
		{"not found is an answer", "", upstream.ErrNotFound},
		{"timeout", "timeout", context.DeadlineExceeded},
		{"canceled", "canceled", context.Canceled},
		{"failure", "error", errors.New("connection refused")},
		{"listingproxy's own bug", "internal", fmt.Errorf("%w: reading: panic: x", upstream.ErrInternal)},
		{"a bound of the adapter's own full", "busy", fmt.Errorf("crm: get agent: waiting for decode budget: %w", upstream.ErrBusy)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, exp := newProvider(t)
			reg := prometheus.NewRegistry()
			m, _ := telemetry.NewMetrics(reg)
			b := telemetry.InstrumentBackend(errBackend{tt.err}, telemetry.BackendOptions{Name: "legacy", Kind: "crm", TracerProvider: tp, Metrics: m})
			_, err := b.GetAgent(context.Background(), upstream.Scope{Tenant: "summit", Country: "au"}, 7)
			if !errors.Is(err, tt.err) {
				t.Fatalf("error %v, want %v unchanged", err, tt.err)
			}
			spans := exp.GetSpans()
			if len(spans) != 1 || spans[0].Name != "backend.GetAgent" {
				t.Fatalf("spans %v, want one backend.GetAgent", spans)
			}
			text := scrape(t, reg)
			if !strings.Contains(text, `listingproxy_backend_request_duration_seconds_count{backend="legacy",operation="GetAgent"} 1`) {
				t.Error("no latency observation")
			}
			errLine := `listingproxy_backend_errors_total{backend="legacy",operation="GetAgent",reason="` + tt.reason + `"} 1`
			if got := strings.Contains(text, errLine); got != (tt.reason != "") {
				t.Errorf("error counter %q present = %v, want %v", errLine, got, tt.reason != "")
			}
		})
	}
}

func TestNewTracing(t *testing.T) {
	ctx := context.Background()
	none, err := telemetry.NewTracing(ctx, telemetry.TraceOptions{Exporter: "none"})
	if err != nil || none.Provider() != nil {
		t.Errorf("none: provider %v, err %v; want nil, nil", none.Provider(), err)
	}
	if _, err := telemetry.NewTracing(ctx, telemetry.TraceOptions{Exporter: "zipkin"}); err == nil {
		t.Error("unknown exporter: want an error")
	}
	disabled, _ := telemetry.NewTracing(ctx, telemetry.TraceOptions{Exporter: "stdout", Getenv: func(k string) string {
		return map[string]string{"OTEL_SDK_DISABLED": "true"}[k]
	}})
	if disabled.Provider() != nil {
		t.Error("OTEL_SDK_DISABLED=true: want no provider")
	}

	var out bytes.Buffer
	tr, err := telemetry.NewTracing(ctx, telemetry.TraceOptions{Exporter: "stdout", SampleRatio: 1, ServiceName: "lp-test", Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	_, span := tr.Provider().Tracer("test").Start(ctx, "flushed-on-shutdown")
	span.End()
	if err := tr.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"flushed-on-shutdown", "lp-test"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout exporter output lacks %q after Shutdown", want)
		}
	}

	zero, _ := telemetry.NewTracing(ctx, telemetry.TraceOptions{Exporter: "stdout", SampleRatio: 0, Stdout: io.Discard})
	_, span = zero.Provider().Tracer("test").Start(ctx, "root")
	if span.SpanContext().IsSampled() {
		t.Error("sample_ratio 0: a new root span was sampled")
	}
	span.End()
	_ = zero.Shutdown(ctx)
}
