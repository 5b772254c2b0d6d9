// Package telemetry owns listingproxy's operational signals: the
// OpenTelemetry tracer provider (exporter, sampler, resource, flush on
// shutdown), the Prometheus metric set, the access-log and request-metrics
// middleware, the server and client sides of HTTP tracing (route-named
// server spans, W3C trace context to the legacy CRM), and an instrumented
// upstream.Backend decorator.
//
// Nothing here is global: the tracer provider and the Prometheus registry
// are values passed to whoever needs them (never otel.SetTracerProvider nor
// prometheus.DefaultRegisterer). It must not import proxy or config; cmd
// adapts proxy's observation hook and the configuration to it.
//
// Attributes and labels carry the route pattern, the tenant, the backend
// and outcomes only: never a password, an Authorization header, a raw path
// or a caller's query values.
package telemetry
