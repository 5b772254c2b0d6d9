package telemetry

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

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

// TraceOptions configure NewTracing. The zero value traces nothing.
type TraceOptions struct {
	// ServiceName is the resource's service.name. Default "listingproxy";
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override it.
	ServiceName string
	// Exporter is none (default), stdout, otlp-http or otlp-grpc.
	Exporter string
	// Endpoint is the collector for the OTLP exporters: a URL
	// ("http://collector:4318", whose scheme decides TLS) or host:port
	// (TLS unless OTEL_EXPORTER_OTLP_INSECURE=true). Empty: the exporter's
	// own OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT handling and defaults
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
}

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
			opts = append(opts, otlptracehttp.WithEndpointURL(o.Endpoint))
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
		name = "listingproxy"
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
