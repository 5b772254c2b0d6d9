package telemetry

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Annotation is what a handler knows about its request that the middleware
// cannot see: the caller's tenant and the cache outcome.
type Annotation struct {
	Tenant     string // "" when unauthenticated
	Cache      string // cache outcome ("hit", "miss", ...); "" when none
	AuthFailed bool   // missing or wrong credentials
}

// Annotate records a for the access line and metrics of the request
// answered through w, which is Middleware's writer or wraps it (found by
// Unwrap). It does nothing outside Middleware. Going through the writer
// rather than the context spares every request a copy of *http.Request.
func Annotate(w http.ResponseWriter, a Annotation) {
	for w != nil {
		if rec, ok := w.(*recorder); ok {
			rec.note = a
			return
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return
		}
		w = u.Unwrap()
	}
}

// Middleware returns the access-log and request-metrics middleware: one log
// line per request (method, route, status, duration, bytes, cache outcome,
// tenant, trace id; never the path's query, the Authorization header or a
// credential) and the listingproxy_http_* and auth-failure metrics. It also
// names the request's server span, if any, after the route pattern that
// http.ServeMux matched ("GET /{country}/properties/{file}"), never the raw
// path. log or m may be nil.
//
// Place it inside ServerHandler (so the span and trace id exist) and
// outside the ServeMux (so the pattern is known once the handler returns).
func Middleware(log *slog.Logger, m *Metrics) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Since(epoch) // monotonic only: one clock read, not two
			rec := recorders.Get().(*recorder)
			*rec = recorder{ResponseWriter: w}
			defer func() { *rec = recorder{}; recorders.Put(rec) }()
			next.ServeHTTP(rec, r)
			if rec.status == 0 {
				rec.status = http.StatusOK // nothing written: net/http sends 200
			}
			elapsed := time.Since(epoch) - start
			method, route := methodLabel(r.Method), Route(r)
			span := trace.SpanFromContext(r.Context())
			if span.IsRecording() {
				span.SetName(method + " " + route)
				span.SetAttributes(attribute.String("http.route", route))
			}
			if m != nil {
				m.observeRequest(route, method, rec.status, elapsed.Seconds())
				if rec.note.AuthFailed {
					m.AuthFailures.Inc()
				}
			}
			if log == nil || !log.Enabled(r.Context(), slog.LevelInfo) {
				return
			}
			attrs := []slog.Attr{
				slog.String("method", method),
				slog.String("route", route),
				slog.Int("status", rec.status),
				slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000),
				slog.Int64("bytes", rec.bytes),
				slog.String("cache", rec.note.Cache),
				slog.String("tenant", rec.note.Tenant),
			}
			if sc := span.SpanContext(); sc.HasTraceID() {
				attrs = append(attrs, slog.String("trace_id", sc.TraceID().String()))
			}
			log.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
		})
	}
}

// Route is the path part of the ServeMux pattern that matched r (without
// its method: "/{country}/properties/{file}"), or "unmatched".
func Route(r *http.Request) string {
	p := r.Pattern
	if i := strings.IndexByte(p, '/'); i > 0 {
		p = p[i:] // drop "GET " (and a host, which we never use)
	}
	if p == "" {
		return "unmatched"
	}
	return p
}

// methodLabel bounds the method label: clients may send any token.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "OTHER"
}

// SpanName names a server span: "METHOD ROUTE" once the ServeMux has matched
// a pattern, the method alone before (otelhttp renames the span after the
// handler; Middleware does it too for handlers behind it).
func SpanName(_ string, r *http.Request) string {
	if r.Pattern == "" {
		return methodLabel(r.Method)
	}
	return methodLabel(r.Method) + " " + Route(r)
}

// epoch anchors Middleware's durations: time.Since on a time with a
// monotonic reading reads only the monotonic clock.
var epoch = time.Now()

// recorders recycles Middleware's writers: a handler must not use its
// ResponseWriter after returning (net/http's own rule), so once the access
// line is out the recorder is free. It is cleared before it is put back.
var recorders = sync.Pool{New: func() any { return new(recorder) }}

// recorder is Middleware's ResponseWriter: it notes the status and bytes
// written, and the handler's Annotation.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
	note   Annotation
}

func (w *recorder) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

// Flush sends buffered data, if the underlying writer can.
func (w *recorder) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ServerHandler wraps h in an OpenTelemetry server span per request, named
// by SpanName, continuing an incoming W3C traceparent. A nil tp returns h
// unchanged: no tracing, no cost.
func ServerHandler(h http.Handler, tp trace.TracerProvider) http.Handler {
	if tp == nil {
		return h
	}
	return otelhttp.NewHandler(h, "listingproxy",
		otelhttp.WithTracerProvider(tp),
		otelhttp.WithPropagators(propagation.TraceContext{}),
		otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()), // metrics are Prometheus's job
		otelhttp.WithSpanNameFormatter(SpanName),
	)
}

// Transport returns base with HTTP client spans and W3C trace context
// propagation (traceparent) for calls to a legacy backend. The query string
// is kept out of the span (url.full), since it carries the caller's
// criteria; the request sent is unchanged. A nil tp returns base.
func Transport(base http.RoundTripper, tp trace.TracerProvider) http.RoundTripper {
	if tp == nil {
		return base
	}
	traced := otelhttp.NewTransport(restoreQuery{base},
		otelhttp.WithTracerProvider(tp),
		otelhttp.WithPropagators(propagation.TraceContext{}),
		otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()),
	)
	return hideQuery{traced}
}

type queryKey struct{}

// hideQuery hands otelhttp a request without its query (so the span never
// records it) and the query in the context; restoreQuery, below otelhttp,
// puts it back before the request leaves.
type hideQuery struct{ next http.RoundTripper }

func (t hideQuery) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.RawQuery == "" {
		return t.next.RoundTrip(r)
	}
	r2 := r.WithContext(context.WithValue(r.Context(), queryKey{}, r.URL.RawQuery))
	u := *r.URL
	u.RawQuery = ""
	r2.URL = &u
	return t.next.RoundTrip(r2)
}

type restoreQuery struct{ next http.RoundTripper }

func (t restoreQuery) RoundTrip(r *http.Request) (*http.Response, error) {
	if q, ok := r.Context().Value(queryKey{}).(string); ok {
		r2 := r.WithContext(r.Context())
		u := *r.URL
		u.RawQuery = q
		r2.URL = &u
		r = r2
	}
	return t.next.RoundTrip(r)
}
