package telemetry

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"listingproxy/upstream"
)

// BackendOptions configure InstrumentBackend.
type BackendOptions struct {
	// Name is the backend's name in the configuration (metric label and
	// span attribute).
	Name string
	// Kind is its kind: sqlite, postgres, mysql or crm.
	Kind string
	// TracerProvider makes the backend.* spans. Nil: no spans.
	TracerProvider trace.TracerProvider
	// Metrics receives latency and errors. Nil: none.
	Metrics *Metrics
}

// InstrumentBackend returns b with a span per call (backend.ListProperties,
// backend.GetProperty, backend.ListAgents, backend.GetAgent; attributes:
// backend name and kind, upstream tenant, country; never criteria) and with
// latency and error metrics per backend and operation. Answers (not found,
// criteria rejected) are not errors. It is an upstream.Wrap decorator.
func InstrumentBackend(b upstream.Backend, o BackendOptions) upstream.Backend {
	ib := &instrumented{o: o}
	if o.TracerProvider != nil {
		ib.tracer = o.TracerProvider.Tracer("listingproxy/backend")
	}
	if o.Metrics != nil {
		for _, op := range upstream.Ops {
			ib.obs[op] = o.Metrics.BackendDuration.WithLabelValues(o.Name, op.String())
			for _, reason := range []string{"timeout", "canceled", "error", "internal", "busy"} {
				o.Metrics.BackendErrors.WithLabelValues(o.Name, op.String(), reason) // exported at 0 from the start
			}
		}
	}
	return upstream.Wrap(b, ib.around)
}

type instrumented struct {
	o      BackendOptions
	tracer trace.Tracer
	obs    [len(upstream.Ops)]prometheus.Observer // by upstream.Op
}

func (b *instrumented) around(ctx context.Context, call upstream.Call, next func(context.Context) error) error {
	begin := time.Now()
	span := trace.SpanFromContext(ctx)
	if b.tracer != nil {
		s := call.Scope
		ctx, span = b.tracer.Start(ctx, "backend."+call.Op.String(), trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
			attribute.String("listingproxy.backend", b.o.Name),
			attribute.String("listingproxy.backend.kind", b.o.Kind),
			attribute.String("listingproxy.upstream_tenant", s.Tenant),
			attribute.String("listingproxy.country", s.Country),
		))
	}
	err := next(ctx)
	reason := failure(err)
	if b.o.Metrics != nil {
		b.obs[call.Op].Observe(time.Since(begin).Seconds())
		if reason != "" {
			b.o.Metrics.BackendErrors.WithLabelValues(b.o.Name, call.Op.String(), reason).Inc()
		}
	}
	if b.tracer == nil {
		return err
	}
	if reason != "" {
		// The reason only: backend messages may quote the query.
		span.SetStatus(codes.Error, reason)
		span.SetAttributes(attribute.String("error.type", reason))
	} else if err != nil {
		span.SetAttributes(attribute.String("listingproxy.backend.answer", answer(err)))
	}
	span.End()
	return err
}

// failure classifies err as a failure reason, or "" for success and
// answers.
func failure(err error) string {
	switch {
	case err == nil, upstream.IsAnswer(err):
		return ""
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, upstream.ErrInternal):
		return "internal"
	case errors.Is(err, upstream.ErrBusy): // a bound of the adapter's own (the CRM's decode budget) was full
		return "busy"
	}
	return "error"
}

func answer(err error) string {
	if errors.Is(err, upstream.ErrNotFound) {
		return "not_found"
	}
	return "criteria_rejected"
}
