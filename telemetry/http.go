package telemetry

import (
	"context"
	"encoding/binary"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"listingproxy/clientip"
)

// Annotation is what a handler knows about its request that the middleware
// cannot see: the caller, the cache outcome, and the failure behind a 5xx.
type Annotation struct {
	Tenant     string // "" when unauthenticated
	Backend    string // the tenant's backend; "" when unauthenticated
	User       string // the authenticated username; "" when unauthenticated
	Cache      string // cache outcome ("hit", "miss", ...); "" when none
	AuthFailed bool   // missing or wrong credentials
	// Refused reports a request refused before authentication other than
	// for its credentials (throttled, the auth pool full): with AuthFailed,
	// what the status page counts as unauthenticated traffic.
	Refused bool
	// Invalid reports an answer with the spec's error list (criteria
	// errors), which is an HTTP 200.
	Invalid bool
	// Err is the failure behind a 5xx answer (never shown to the client):
	// it feeds the ErrorDigest of Backend instead of a line per request.
	Err error
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

// RequestIDHeader carries a request's id, in from a trusted proxy and out in
// every response.
const RequestIDHeader = "X-Request-Id"

// AccessOptions configure Middleware. The zero value works: no log, no
// metrics, client addresses and request ids from the TCP peer alone.
type AccessOptions struct {
	// Logger receives one "request" line per request at Info. Nil: none.
	Logger *slog.Logger
	// Metrics receives the listingproxy_http_*, per-tenant and
	// auth-failure counts. Nil: none.
	Metrics *Metrics
	// TrustedProxies are the proxies (server.trusted_proxies) whose
	// forwarding headers name the client address (clientip.Resolver) and
	// whose X-Request-Id is kept; any other peer's id is replaced by a
	// fresh one (a client must not pass itself off as another request).
	// Default: none; the client is the TCP peer.
	TrustedProxies []netip.Prefix
	// Errors aggregates the failures behind 5xx answers (Annotation.Err)
	// into one line per backend per interval. Nil: they are not logged.
	Errors *ErrorDigest
	// Tracing reports that requests reach Middleware through
	// ServerHandler with a tracer provider: Middleware then names each
	// request's server span after its route and logs its trace id. False
	// (tracing off) spares every request those context lookups.
	Tracing bool
}

// Middleware returns the access-log and request-metrics middleware. Each
// request gets an id (X-Request-Id from a trusted proxy, else a fresh one),
// echoed in the response before the handler runs. Once the handler returns
// it writes one access line: method, route, path with its query (values of
// credential-like parameters redacted; never the userinfo or the
// Authorization header), status, bytes, duration, tenant, user, client
// address, cache outcome, request id and trace id. It counts the
// listingproxy_http_* and per-tenant metrics, passes a 5xx's failure to
// the ErrorDigest, and (with AccessOptions.Tracing) names the request's
// server span after the route pattern that http.ServeMux matched ("GET
// /{country}/properties/{file}"), never the raw path.
//
// Place it inside ServerHandler (so the span and trace id exist) and
// outside the ServeMux (so the pattern is known once the handler returns).
func Middleware(o AccessOptions) func(http.Handler) http.Handler {
	m := o.Metrics
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// What every request does is in this function; the access
			// line, the span's name and the error digest are in
			// o.finish, called only when one of them is on. Every piece
			// here costs 10-30 times its loop figure in place
			// (bench/NOTES.md, sessions 21 and 22).
			start := time.Since(epoch) // monotonic only: one clock read, not two
			rec := recorders.Get().(*recorder)
			idv := rec.requestID(r, o.TrustedProxies)
			w.Header()[RequestIDHeader] = idv
			rec.ResponseWriter = w
			next.ServeHTTP(rec, r)
			if rec.status == 0 {
				rec.status = http.StatusOK // nothing written: net/http sends 200
			}
			elapsed := time.Since(epoch) - start
			note := &rec.note
			if m != nil {
				bucket := latencyBucket(elapsed)
				ms := &rec.series
				if ms.m != m {
					*ms = seriesMemo{m: m}
				}
				ms.route(r.Pattern).observe(r.Method, rec.status, int64(elapsed), bucket)
				if note.AuthFailed {
					m.AuthFailures.Inc()
				}
				if note.Tenant != "" || note.AuthFailed || note.Refused {
					ms.tenant(note.Tenant, note.Backend).count(note.Cache, rec.status, note.Invalid, bucket, int64((start+elapsed)/time.Minute))
				}
			}
			if o.Tracing || (note.Err != nil && o.Errors != nil) || (o.Logger != nil && o.Logger.Enabled(r.Context(), slog.LevelInfo)) {
				o.finish(r, rec, idv[0], elapsed)
			}
			rec.reset()
			recorders.Put(rec)
		})
	}
}

// finish names r's span, passes a 5xx's failure to the error digest and
// writes r's access line, as o asks.
func (o *AccessOptions) finish(r *http.Request, rec *recorder, id string, elapsed time.Duration) {
	method, route := methodLabel(r.Method), Route(r)
	var span trace.Span
	if o.Tracing {
		span = trace.SpanFromContext(r.Context())
		if span.IsRecording() {
			span.SetName(method + " " + route)
			span.SetAttributes(attribute.String("http.route", route))
		}
	}
	note := &rec.note
	if note.Err != nil && rec.status >= 500 && o.Errors != nil {
		o.Errors.Record(note.Backend, rec.status, note.Err)
	}
	if o.Logger == nil || !o.Logger.Enabled(r.Context(), slog.LevelInfo) {
		return
	}
	clients := clientip.Resolver{Trusted: o.TrustedProxies}
	attrs := []slog.Attr{
		slog.String("method", method),
		slog.String("route", route),
		slog.String("path", logPath(r.URL)),
		slog.Int("status", rec.status),
		slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000),
		slog.Int64("bytes", rec.bytes),
		slog.String("tenant", note.Tenant),
		slog.String("user", note.User),
		slog.String("client", addrString(clients.Addr(r))),
		slog.String("cache", note.Cache),
		slog.String("request_id", id),
	}
	if span != nil {
		if sc := span.SpanContext(); sc.HasTraceID() {
			attrs = append(attrs, slog.String("trace_id", sc.TraceID().String()))
		}
	}
	o.Logger.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
}

// requestID is r's X-Request-Id when its peer is a trusted proxy and the
// id is well formed, else a fresh random one, as a response header's value.
func (w *recorder) requestID(r *http.Request, trusted []netip.Prefix) []string {
	if len(trusted) > 0 {
		if in := r.Header.Get(RequestIDHeader); validRequestID(in) {
			// The peer is the client for a resolver that trusts no one.
			peer := clientip.Resolver{}.Addr(r)
			for _, p := range trusted {
				if p.Contains(peer) {
					return []string{in}
				}
			}
		}
	}
	return w.freshRequestID()
}

// idBatch is 64 fresh request ids, ready as header values: 32 hex digits
// of 128 random bits each, cut from one string. Making them 64 at a time
// spares every request two allocations, the id's string and the header's
// one-element slice (BenchmarkServeHit in cmd/listingproxy: 21 allocations
// per hit before, 19 after). A handed-out value keeps its batch (about
// 3 KB) alive until its response is gone.
type idBatch struct {
	vals [64]string
	next int
}

func newIDBatch() *idBatch {
	var digits [len(idBatch{}.vals) * 32]byte
	for i := 0; i < len(digits); i += 16 {
		r := rand.Uint64()
		binary.LittleEndian.PutUint64(digits[i:], hexDigits(r&0x0f0f0f0f0f0f0f0f))
		binary.LittleEndian.PutUint64(digits[i+8:], hexDigits(r>>4&0x0f0f0f0f0f0f0f0f))
	}
	all := string(digits[:])
	b := new(idBatch)
	for i := range b.vals {
		b.vals[i] = all[i*32 : i*32+32]
	}
	return b
}

// hexDigits turns eight nibbles, one in the low half of each byte of n,
// into their eight lowercase hex digits, in place: '0' added to each, and
// 'a'-'0'-10 more to those of 10 and above (whose byte, plus 6, carries
// into bit 4). A random 64-bit value's two halves of each byte give 16
// digits of 64 random bits, eight at a time, where a table took 16 lookups
// (BenchmarkMiddlewareDirect: the ids were a fifth of the middleware's
// loop time; bench/NOTES.md, session 22).
func hexDigits(n uint64) uint64 {
	const ones = 0x0101010101010101
	ten := (n + 6*ones) >> 4 & ones // 1 in each byte of 10 or more
	return n + '0'*ones + ten*('a'-'0'-10)
}

// freshRequestID is a fresh random request id as a header value of its own
// (a one-element slice with no room to append into its neighbour's), from
// w's batch: a recorder keeps its batch across requests, so one pool
// (recorders) serves both.
func (w *recorder) freshRequestID() []string {
	b := w.ids
	if b == nil || b.next == len(b.vals) {
		b = newIDBatch()
		w.ids = b
	}
	v := b.vals[b.next : b.next+1 : b.next+1]
	b.next++
	return v
}

// validRequestID admits the ids proxies generate (UUIDs, hex, base64 and
// the like), up to 128 bytes: nothing that could break a log line.
func validRequestID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_.:+/=@", c) >= 0) {
			return false
		}
	}
	return true
}

func addrString(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}

// logPath is u's path and query for the access log: never the userinfo
// (an absolute-form request target may carry one), and the values of
// credential-like parameters replaced. The API has no such parameter; this
// guards against a client putting one in the URL anyway.
func logPath(u *url.URL) string {
	p := u.EscapedPath()
	if u.RawQuery == "" {
		return p
	}
	q := u.RawQuery
	if secretName(q) { // cheap test of the whole query first
		parts := strings.Split(q, "&")
		for i, kv := range parts {
			k, _, _ := strings.Cut(kv, "=")
			if secretName(k) {
				parts[i] = k + "=REDACTED"
			}
		}
		q = strings.Join(parts, "&")
	}
	return p + "?" + q
}

// secretWords are the parameter-name fragments whose values are redacted.
var secretWords = []string{"password", "passwd", "token", "secret", "apikey", "api_key"}

func secretName(s string) bool {
	if un, err := url.QueryUnescape(s); err == nil {
		s = un
	}
	s = strings.ToLower(s)
	for _, w := range secretWords {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// Route is the path part of the ServeMux pattern that matched r (without
// its method: "/{country}/properties/{file}"), or "unmatched".
func Route(r *http.Request) string { return routeOf(r.Pattern) }

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
// line is out the recorder is free. It is cleared (but for its request ids)
// before it is put back.
var recorders = sync.Pool{New: func() any { return new(recorder) }}

// recorder is Middleware's ResponseWriter: it notes the status and bytes
// written, and the handler's Annotation.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
	note   Annotation
	ids    *idBatch   // fresh request ids, kept across requests
	series seriesMemo // kept across requests
}

// reset clears w for its next request, keeping its ids and series.
func (w *recorder) reset() { *w = recorder{ids: w.ids, series: w.series} }

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
