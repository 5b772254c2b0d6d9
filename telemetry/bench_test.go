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
// per request (access log off, as in bench/hit.sh), in front of a ServeMux.
func BenchmarkMiddleware(b *testing.B) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{country}/properties/{file}", annotated)
	benchMiddleware(b, mux)
}

// BenchmarkMiddlewareDirect is BenchmarkMiddleware without the ServeMux:
// the handler sets the pattern itself, as proxy.Server.route does for the
// API's routes, so that the figure is the middleware's alone.
func BenchmarkMiddlewareDirect(b *testing.B) {
	benchMiddleware(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Pattern = "GET /{country}/properties/{file}"
		annotated(w, r)
	}))
}

// annotated answers as a cache hit of tenant harbour.
func annotated(w http.ResponseWriter, _ *http.Request) {
	telemetry.Annotate(w, telemetry.Annotation{Tenant: "harbour", Cache: "hit"})
	w.WriteHeader(http.StatusOK)
}

// benchMiddleware measures the middleware (metrics on, access log off) in
// front of next, for a request of the API's single-property shape.
func benchMiddleware(b *testing.B, next http.Handler) {
	m, err := telemetry.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(nil, &slog.HandlerOptions{Level: slog.LevelError}))
	h := telemetry.Middleware(telemetry.AccessOptions{Logger: log, Metrics: m})(next)
	r := httptest.NewRequest("GET", "/au/properties/1.xml", nil)
	w := &discard{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(w, r)
	}
}
