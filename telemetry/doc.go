// Package telemetry owns listingproxy's operational signals: the service's
// logger (NewLogger), the OpenTelemetry tracer provider (exporter, sampler, resource, flush on
// shutdown), the Prometheus metric set (with build info, configuration
// reloads, purges and per-tenant traffic, and the recent reloads and purges
// for the operator's page; the families read at scrape time from the
// counters other packages keep: the cache, the breakers and limits, each
// backend's readiness, a CRM's decode budget and tolerated flaws, the
// proxy's capped lists, the shared tier), the access-log and request-metrics middleware
// (request ids, client addresses behind trusted proxies), the aggregation
// of repeated backend failures into one log line per backend per interval
// (ErrorDigest), the server and client sides of HTTP tracing (route-named
// server spans, W3C trace context to the legacy CRM), and an instrumented
// upstream.Backend decorator.
//
// Nothing here is global: the tracer provider and the Prometheus registry
// are values passed to whoever needs them (never otel.SetTracerProvider nor
// prometheus.DefaultRegisterer). It must not import proxy or config; cmd
// adapts proxy's observation hook to it, and config turns the
// configuration into its TraceOptions. It imports
// cache, cache/redistier, cache/disktier, upstream/breaker and upstream/crm for the types
// of the counters they keep (their Stats), so each shape is declared once.
//
// Two things are hand-written where the libraries have them, for the hit
// path's sake (bench/NOTES.md, sessions 21 and 22): the request counter and
// duration histogram are atomic counters made into Prometheus series at
// scrape time (requestMetrics, as the per-tenant counters already were),
// and request ids are cut 64 at a time from one string of random hex digits
// (idBatch), not formatted one by one.
//
// Span attributes and metric labels carry the route pattern, the tenant,
// the backend and outcomes only: never a password, an Authorization
// header, a raw path or a caller's query values. The access line alone
// carries the path and query (an SRE searches by them), with the values of
// credential-like parameters redacted and never the URL's userinfo.
package telemetry
