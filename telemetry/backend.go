package telemetry

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"listingproxy/normalize"
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
// criteria rejected) are not errors.
func InstrumentBackend(b upstream.Backend, o BackendOptions) upstream.Backend {
	ib := &instrumented{next: b, o: o, obs: map[string]prometheus.Observer{}}
	if o.TracerProvider != nil {
		ib.tracer = o.TracerProvider.Tracer("listingproxy/backend")
	}
	if o.Metrics != nil {
		for _, op := range []string{opListProperties, opGetProperty, opListAgents, opGetAgent} {
			ib.obs[op] = o.Metrics.BackendDuration.WithLabelValues(o.Name, op)
			for _, reason := range []string{"timeout", "canceled", "error"} {
				o.Metrics.BackendErrors.WithLabelValues(o.Name, op, reason) // exported at 0 from the start
			}
		}
	}
	return ib
}

const (
	opListProperties = "ListProperties"
	opGetProperty    = "GetProperty"
	opListAgents     = "ListAgents"
	opGetAgent       = "GetAgent"
)

type instrumented struct {
	next   upstream.Backend
	o      BackendOptions
	tracer trace.Tracer
	obs    map[string]prometheus.Observer
}

func (b *instrumented) start(ctx context.Context, op string, s upstream.Scope) (context.Context, func(error)) {
	begin := time.Now()
	span := trace.SpanFromContext(ctx)
	if b.tracer != nil {
		ctx, span = b.tracer.Start(ctx, "backend."+op, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
			attribute.String("listingproxy.backend", b.o.Name),
			attribute.String("listingproxy.backend.kind", b.o.Kind),
			attribute.String("listingproxy.upstream_tenant", s.Tenant),
			attribute.String("listingproxy.country", s.Country),
		))
	}
	return ctx, func(err error) {
		reason := failure(err)
		if b.o.Metrics != nil {
			b.obs[op].Observe(time.Since(begin).Seconds())
			if reason != "" {
				b.o.Metrics.BackendErrors.WithLabelValues(b.o.Name, op, reason).Inc()
			}
		}
		if b.tracer == nil {
			return
		}
		if reason != "" {
			// The reason only: backend messages may quote the query.
			span.SetStatus(codes.Error, reason)
			span.SetAttributes(attribute.String("error.type", reason))
		} else if err != nil {
			span.SetAttributes(attribute.String("listingproxy.backend.answer", answer(err)))
		}
		span.End()
	}
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
	}
	return "error"
}

func answer(err error) string {
	if errors.Is(err, upstream.ErrNotFound) {
		return "not_found"
	}
	return "criteria_rejected"
}

func (b *instrumented) ListProperties(ctx context.Context, s upstream.Scope, c normalize.Criteria) ([]upstream.Property, error) {
	ctx, end := b.start(ctx, opListProperties, s)
	ps, err := b.next.ListProperties(ctx, s, c)
	end(err)
	return ps, err
}

func (b *instrumented) GetProperty(ctx context.Context, s upstream.Scope, id int64) (upstream.Property, error) {
	ctx, end := b.start(ctx, opGetProperty, s)
	p, err := b.next.GetProperty(ctx, s, id)
	end(err)
	return p, err
}

func (b *instrumented) ListAgents(ctx context.Context, s upstream.Scope, c normalize.Criteria) ([]upstream.Agent, error) {
	ctx, end := b.start(ctx, opListAgents, s)
	as, err := b.next.ListAgents(ctx, s, c)
	end(err)
	return as, err
}

func (b *instrumented) GetAgent(ctx context.Context, s upstream.Scope, id int64) (upstream.Agent, error) {
	ctx, end := b.start(ctx, opGetAgent, s)
	a, err := b.next.GetAgent(ctx, s, id)
	end(err)
	return a, err
}
