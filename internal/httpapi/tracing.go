package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/contactd/contactd/internal/auth"
	"github.com/contactd/contactd/internal/platform/tracing"
)

// traced gives each request a server span named after the spec's operation. Its parent is the
// traceparent of a trusted proxy's request (CONTACTD_TRUSTED_PROXIES: the operator's own
// edge); any other client's traceparent is only a link on a new root span, so no client
// decides whether its request is sampled (forcing the operator's costs up, or hiding from
// them) nor joins the operator's traces. Its attributes are the route (never the path or the
// query, which may carry an email), the method, the status, the request id and the account.
// Without tracing (tracing.Enabled at start) requests go straight through.
func (s *Server) traced(next echo.HandlerFunc) echo.HandlerFunc {
	if !tracing.Enabled() {
		return next
	}
	tracer := tracing.Tracer()
	return func(c echo.Context) error {
		r := c.Request()
		ctx := otel.GetTextMapPropagator().Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}
		if remote := trace.SpanContextFromContext(ctx); remote.IsValid() && !s.fromProxy(tcpPeer(r)) {
			ctx = r.Context() // the client's baggage goes too
			opts = append(opts, trace.WithNewRoot(), trace.WithLinks(trace.Link{SpanContext: remote,
				Attributes: []attribute.KeyValue{attribute.String("contactd.link", "client")}}))
		}
		ctx, span := tracer.Start(ctx, "HTTP "+r.Method, opts...)
		defer span.End()
		c.SetRequest(r.WithContext(ctx))
		err := next(c)
		if err != nil {
			c.Error(err) // the status is the error's
		}
		status := c.Response().Status
		if op := operationID(c.Request().Context()); op != "" {
			span.SetName(op)
		}
		attrs := []attribute.KeyValue{attribute.String("http.request.method", r.Method),
			attribute.Int("http.response.status_code", status), attribute.String("contactd.request_id", requestID(c))}
		if route := c.Path(); route != "" {
			attrs = append(attrs, attribute.String("http.route", route))
		}
		if p, ok := auth.FromContext(c.Request().Context()); ok {
			attrs = append(attrs, attribute.String("contactd.account_id", p.AccountID.String()))
		}
		span.SetAttributes(attrs...)
		if status >= http.StatusInternalServerError {
			span.SetStatus(codes.Error, http.StatusText(status))
		}
		return nil
	}
}
