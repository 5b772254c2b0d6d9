package telemetry_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"listingproxy/telemetry"
)

type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) WriteHeader(int)             {}
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }

// BenchmarkMiddleware is the access-log and metrics middleware's own cost
// per request (access log off, as in bench/hit.sh).
func BenchmarkMiddleware(b *testing.B) {
	m, err := telemetry.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(nil, &slog.HandlerOptions{Level: slog.LevelError}))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{country}/properties/{file}", func(w http.ResponseWriter, r *http.Request) {
		telemetry.Annotate(w, telemetry.Annotation{Tenant: "harbour", Cache: "hit"})
		w.WriteHeader(http.StatusOK)
	})
	h := telemetry.Middleware(telemetry.AccessOptions{Logger: log, Metrics: m})(mux)
	r := httptest.NewRequest("GET", "/au/properties/1.xml", nil)
	w := &discard{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(w, r)
	}
}

// BenchmarkMiddlewareDirect is BenchmarkMiddleware without the ServeMux:
// the handler sets the pattern itself, as proxy.Server.route does for the
// API's routes, so that the figure is the middleware's alone.
func BenchmarkMiddlewareDirect(b *testing.B) {
	m, err := telemetry.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(nil, &slog.HandlerOptions{Level: slog.LevelError}))
	h := telemetry.Middleware(telemetry.AccessOptions{Logger: log, Metrics: m})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Pattern = "GET /{country}/properties/{file}"
		telemetry.Annotate(w, telemetry.Annotation{Tenant: "harbour", Cache: "hit"})
		w.WriteHeader(http.StatusOK)
	}))
	r := httptest.NewRequest("GET", "/au/properties/1.xml", nil)
	w := &discard{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(w, r)
	}
}
