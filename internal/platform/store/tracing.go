package store

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// span starts a child span of ctx's for a database step, when ctx's span records (tracing
// on, the request sampled): otherwise it costs a check. end records the step's error.
func span(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, func(err error, more ...attribute.KeyValue)) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, func(error, ...attribute.KeyValue) {}
	}
	attrs = append(attrs, attribute.String("db.system.name", "postgresql"))
	ctx, s := otel.Tracer("github.com/contactd/contactd").Start(ctx, name,
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return ctx, func(err error, more ...attribute.KeyValue) {
		s.SetAttributes(more...)
		if err != nil {
			s.SetStatus(codes.Error, err.Error())
		}
		s.End()
	}
}
