package telemetry

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Exporter names accepted by TraceOptions.Exporter.
const (
	ExporterNone     = "none"
	ExporterStdout   = "stdout"
	ExporterOTLPHTTP = "otlp-http"
	ExporterOTLPGRPC = "otlp-grpc"
)

// DefaultServiceName is TraceOptions.ServiceName's default.
const DefaultServiceName = "listingproxy"

// TraceOptions configure NewTracing. The zero value traces nothing.
type TraceOptions struct {
	// ServiceName is the resource's service.name. Default DefaultServiceName;
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override it.
	ServiceName string
	// Exporter is none (default), stdout, otlp-http or otlp-grpc.
	Exporter string
	// Endpoint is the collector for the OTLP exporters: a URL
	// ("http://collector:4318", whose scheme decides TLS) or host:port
	// (TLS unless OTEL_EXPORTER_OTLP_INSECURE=true). For otlp-http a URL
	// without a path gets /v1/traces, as OTEL_EXPORTER_OTLP_ENDPOINT does;
	// a URL with a path is used as it is, as
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is. Empty: the exporter's own
	// OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT handling and defaults
	// (localhost:4318 / localhost:4317).
	Endpoint string
	// SampleRatio is the share of new traces sampled, in [0, 1]; a sampled
	// (or unsampled) incoming traceparent is followed either way
	// (ParentBased). OTEL_TRACES_SAMPLER, when set, replaces this sampler.
	SampleRatio float64
	// Stdout receives the stdout exporter's spans. Default os.Stdout.
	Stdout io.Writer
	// Getenv reads OTEL_SDK_DISABLED and OTEL_TRACES_SAMPLER. Default
	// os.Getenv. (The exporters and resource read the other OTEL_*
	// variables from the process environment themselves.)
	Getenv func(string) string
	// Log receives export failures as structured warnings, at most one
	// per ExportErrorInterval, counting the failures since the previous
	// one. Default: discarded.
	Log *slog.Logger
	// Now is the clock of that rate limit. Default time.Now.
	Now func() time.Time
	// ExportFailed, when set, is called once per span batch the exporter
	// failed to deliver (Metrics.TraceExportFailures counts them).
	ExportFailed func()
}

// ExportErrorInterval is the least time between two warnings about failed
// trace exports.
const ExportErrorInterval = time.Minute

// Tracing is a configured tracer provider. Its zero value and a nil
// *Tracing trace nothing.
type Tracing struct {
	tp *sdktrace.TracerProvider
}

// NewTracing builds the tracer provider that o describes. It does not
// install it globally.
func NewTracing(ctx context.Context, o TraceOptions) (*Tracing, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return &Tracing{}, nil
	}
	var exp sdktrace.SpanExporter
	var err error
	switch o.Exporter {
	case "", ExporterNone:
		return &Tracing{}, nil
	case ExporterStdout:
		w := o.Stdout
		if w == nil {
			w = os.Stdout
		}
		exp, err = stdouttrace.New(stdouttrace.WithWriter(w))
	case ExporterOTLPHTTP:
		var opts []otlptracehttp.Option
		switch {
		case isURL(o.Endpoint):
			opts = append(opts, otlptracehttp.WithEndpointURL(TracesURL(o.Endpoint)))
		case o.Endpoint != "":
			opts = append(opts, otlptracehttp.WithEndpoint(o.Endpoint))
		}
		exp, err = otlptracehttp.New(ctx, opts...)
	case ExporterOTLPGRPC:
		var opts []otlptracegrpc.Option
		switch {
		case isURL(o.Endpoint):
			opts = append(opts, otlptracegrpc.WithEndpointURL(o.Endpoint))
		case o.Endpoint != "":
			opts = append(opts, otlptracegrpc.WithEndpoint(o.Endpoint))
		}
		exp, err = otlptracegrpc.New(ctx, opts...)
	default:
		return nil, fmt.Errorf("telemetry: unknown exporter %q (want none, stdout, otlp-http or otlp-grpc)", o.Exporter)
	}
	if err != nil {
		return nil, fmt.Errorf("telemetry: %s exporter: %w", o.Exporter, err)
	}
	name := o.ServiceName
	if name == "" {
		name = DefaultServiceName
	}
	// Later detectors win: the environment overrides the configuration.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", name)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	)
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	exp = newReportingExporter(exp, o)
	opts := []sdktrace.TracerProviderOption{sdktrace.WithBatcher(exp), sdktrace.WithResource(res)}
	if getenv("OTEL_TRACES_SAMPLER") == "" {
		opts = append(opts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(o.SampleRatio))))
	}
	return &Tracing{tp: sdktrace.NewTracerProvider(opts...)}, nil
}

func isURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// TracesURL is the OTLP/HTTP traces URL of endpoint, a collector's URL: a
// URL without a path gets /v1/traces (a collector answers 404 on /), one
// with a path is kept. Everything else is returned unchanged.
func TracesURL(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil || !isURL(endpoint) || (u.Path != "" && u.Path != "/") {
		return endpoint
	}
	u.Path = "/v1/traces"
	return u.String()
}

// reportingExporter reports its exporter's failures itself: each is
// counted, and a structured warning is logged at most once per interval.
// It then returns nil, because the batch span processor would hand the
// error to OpenTelemetry's global error handler (otel.Handle: one
// unstructured line per failure, and no way to give a provider its own
// handler short of installing a global one); the processor drops the batch
// either way, and the OTLP exporters retry inside ExportSpans.
type reportingExporter struct {
	sdktrace.SpanExporter
	endpoint string
	log      *slog.Logger
	now      func() time.Time
	failed   func()

	mu       sync.Mutex
	next     time.Time // when the next warning may be logged
	failures int       // failures since the last warning
}

func newReportingExporter(exp sdktrace.SpanExporter, o TraceOptions) *reportingExporter {
	e := &reportingExporter{SpanExporter: exp, endpoint: o.Endpoint, log: o.Log, now: o.Now, failed: o.ExportFailed}
	if e.endpoint == "" {
		e.endpoint = "(from OTEL_EXPORTER_OTLP_* or the default)"
	} else if o.Exporter == ExporterOTLPHTTP {
		e.endpoint = TracesURL(e.endpoint)
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if e.now == nil {
		e.now = time.Now
	}
	return e
}

// ExportSpans implements sdktrace.SpanExporter.
func (e *reportingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.SpanExporter.ExportSpans(ctx, spans)
	if err == nil {
		return nil
	}
	if e.failed != nil {
		e.failed()
	}
	now := e.now()
	e.mu.Lock()
	e.failures++
	if now.Before(e.next) {
		e.mu.Unlock()
		return nil
	}
	n := e.failures
	e.failures = 0
	e.next = now.Add(ExportErrorInterval)
	e.mu.Unlock()
	e.log.Warn("trace export failed: spans dropped", "endpoint", e.endpoint, "spans", len(spans),
		"failures", n, "per", ExportErrorInterval.String(), "err", err.Error())
	return nil
}

// Provider returns the tracer provider, or nil when tracing is off (callers
// treat nil as "make no spans").
func (t *Tracing) Provider() trace.TracerProvider {
	if t == nil || t.tp == nil {
		return nil
	}
	return t.tp
}

// Shutdown flushes the spans still buffered to the exporter and stops it,
// within ctx's deadline.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil || t.tp == nil {
		return nil
	}
	return t.tp.Shutdown(ctx)
}
