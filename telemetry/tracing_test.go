package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"listingproxy/telemetry"
)

func TestTracesURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://collector:4318", "http://collector:4318/v1/traces"},
		{"http://collector:4318/", "http://collector:4318/v1/traces"},
		{"https://collector.example", "https://collector.example/v1/traces"},
		{"http://collector:4318/v1/traces", "http://collector:4318/v1/traces"},
		{"https://vendor.example/otlp/traces", "https://vendor.example/otlp/traces"},
		{"collector:4318", "collector:4318"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := telemetry.TracesURL(tt.in); got != tt.want {
			t.Errorf("TracesURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// otlpReceiver is an in-process OTLP/HTTP collector: it records the path
// and span names of every export it accepts.
type otlpReceiver struct {
	srv      *httptest.Server
	received chan string // "path span-name"
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{received: make(chan string, 16)}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" && req.URL.Path != "/custom/traces" {
			http.NotFound(w, req) // what a collector answers on /
			return
		}
		body, err := io.ReadAll(req.Body)
		var msg collectortrace.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &msg)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rs := range msg.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					r.received <- req.URL.Path + " " + sp.Name
				}
			}
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		_, _ = w.Write(out)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// TestOTLPHTTPSpansArrive: the collector's address written as in the
// docs (a URL with no path) or as host:port reaches /v1/traces.
func TestOTLPHTTPSpansArrive(t *testing.T) {
	recv := newOTLPReceiver(t)
	hostPort := recv.srv.Listener.Addr().String()
	tests := []struct {
		name, endpoint, wantPath string
		insecure                 bool
	}{
		{"url without a path", recv.srv.URL, "/v1/traces", false},
		{"url with a slash", recv.srv.URL + "/", "/v1/traces", false},
		{"url with its own path", recv.srv.URL + "/custom/traces", "/custom/traces", false},
		{"host:port", hostPort, "/v1/traces", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.insecure {
				t.Setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
			}
			var failed atomic.Int64
			tr, err := telemetry.NewTracing(context.Background(), telemetry.TraceOptions{
				Exporter: telemetry.ExporterOTLPHTTP, Endpoint: tt.endpoint, SampleRatio: 1,
				Getenv: func(string) string { return "" }, ExportFailed: func() { failed.Add(1) },
			})
			if err != nil {
				t.Fatal(err)
			}
			_, span := tr.Provider().Tracer("test").Start(context.Background(), "GET /{country}/properties")
			span.End()
			if err := tr.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			select {
			case got := <-recv.received:
				if want := tt.wantPath + " GET /{country}/properties"; got != want {
					t.Errorf("received %q, want %q", got, want)
				}
			default:
				t.Fatalf("no span arrived (failed exports: %d)", failed.Load())
			}
		})
	}
}

// TestTraceExportFailuresAreReported: a collector that refuses exports
// yields counted failures and structured warnings, at most one per
// interval, and nothing for OpenTelemetry's global error handler.
func TestTraceExportFailuresAreReported(t *testing.T) {
	refusing := httptest.NewServer(http.NotFoundHandler())
	defer refusing.Close()
	prev := otel.GetErrorHandler()
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		t.Errorf("error reached OpenTelemetry's global handler: %v", err)
	}))
	defer otel.SetErrorHandler(prev)

	var logs bytes.Buffer
	now := time.Date(2026, 11, 22, 20, 0, 0, 0, time.UTC)
	var failed atomic.Int64
	tr, err := telemetry.NewTracing(context.Background(), telemetry.TraceOptions{
		Exporter: telemetry.ExporterOTLPHTTP, Endpoint: refusing.URL, SampleRatio: 1,
		Getenv: func(string) string { return "" },
		Log:    slog.New(slog.NewJSONHandler(&logs, nil)), Now: func() time.Time { return now },
		ExportFailed: func() { failed.Add(1) },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Shutdown(context.Background())
	tp := tr.Provider().(*sdktrace.TracerProvider)
	export := func() {
		_, span := tp.Tracer("test").Start(context.Background(), "span")
		span.End()
		if err := tp.ForceFlush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	export()                                     // logged
	export()                                     // counted, not logged
	now = now.Add(telemetry.ExportErrorInterval) // the interval has passed
	export()                                     // logged, with the two since the last line

	if got := failed.Load(); got != 3 {
		t.Errorf("failures counted %d, want 3", got)
	}
	type line struct {
		Level, Msg, Endpoint, Per, Err string
		Spans, Failures                int
	}
	var got []line
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var v line
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if !strings.Contains(v.Err, "404") {
			t.Errorf("err %q, want the collector's 404", v.Err)
		}
		v.Err = ""
		got = append(got, v)
	}
	want := []line{
		{"WARN", "trace export failed: spans dropped", refusing.URL + "/v1/traces", "1m0s", "", 1, 1},
		{"WARN", "trace export failed: spans dropped", refusing.URL + "/v1/traces", "1m0s", "", 1, 2},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("warnings mismatch (-want +got):\n%s", diff)
	}
}
