// Package tracing is contactd's OpenTelemetry tracing: off unless the standard
// OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set, then spans go by
// OTLP/HTTP to that collector, configured by the SDK's own OTEL_* variables (sampler, headers,
// service name). One trace follows a write: the API request (its parent read from a W3C
// traceparent header), the transaction or group commit it waited for, each event it made, and
// every delivery attempt of those events, made later by any process: an event keeps the
// traceparent of its span (webhook_events.trace), and an attempt's span is its child, with a
// span link to it as the messaging conventions draw a queue. An attempt sends its own
// traceparent to the receiver.
//
// No attribute carries a contact's email, name or phone, nor a request's query string or body:
// ids, types, routes and status codes only (TestNoPersonalDataInSpans).
package tracing

import (
	"context"
	"os"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Name is the instrumentation scope of contactd's spans.
const Name = "github.com/contactd/contactd"

var enabled atomic.Bool

// Enabled reports whether Setup started tracing: code that would do work only for a span
// (a middleware, a header) skips it otherwise.
func Enabled() bool { return enabled.Load() }

// Configured reports whether the environment asks for traces.
func Configured() bool {
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Setup starts tracing when Configured, as service (its version attached), and returns the
// function that flushes and stops it; otherwise it does nothing and returns a no-op.
func Setup(ctx context.Context, service, version string) (shutdown func(context.Context) error, err error) {
	if !Configured() {
		return func(context.Context) error { return nil }, nil
	}
	exporter, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, err
	}
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, when set, win over ours
	res, err := resource.Merge(resource.Default(), resource.NewWithAttributes(semconv.SchemaURL,
		semconv.ServiceName(service), semconv.ServiceVersion(version)))
	if err == nil {
		res, err = resource.Merge(res, resource.Environment())
	}
	if err != nil {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	enabled.Store(true)
	return func(ctx context.Context) error {
		enabled.Store(false)
		return tp.Shutdown(ctx)
	}, nil
}

// Tracer is contactd's tracer (a no-op until Setup).
func Tracer() trace.Tracer { return otel.Tracer(Name) }

// Traced reports whether ctx is inside a span that records: work done only for tracing
// (a child span, a stored traceparent) is skipped when not.
func Traced(ctx context.Context) bool { return trace.SpanFromContext(ctx).IsRecording() }

// Traceparent is the W3C traceparent of ctx's span ("" when there is none).
func Traceparent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	return carrier["traceparent"]
}

// Remote is the span context a stored traceparent names (invalid for "" or a malformed one).
func Remote(traceparent string) trace.SpanContext {
	if traceparent == "" {
		return trace.SpanContext{}
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceparent})
	return trace.SpanContextFromContext(ctx)
}
