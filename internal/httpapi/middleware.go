package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/auth"
)

const headerRequestID = "X-Request-Id"

var errMediaType = apperr.New(apperr.KindMediaType, "UnsupportedMediaType", "request body must be application/json")

func errTooLarge(limit int64) *apperr.Error {
	return apperr.New(apperr.KindTooLarge, "PayloadTooLarge", fmt.Sprintf("request body is larger than %d bytes", limit))
}

// requestIDMiddleware accepts a sane X-Request-Id from the client or makes one, and echoes it.
func requestIDMiddleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := c.Request().Header.Get(headerRequestID)
		if !saneRequestID(id) {
			var b [8]byte
			_, _ = rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		c.Set(headerRequestID, id)
		c.Response().Header().Set(headerRequestID, id)
		return next(c)
	}
}

func saneRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, r := range id {
		if r < 0x21 || r > 0x7e {
			return false
		}
	}
	return true
}

func requestID(c echo.Context) string { id, _ := c.Get(headerRequestID).(string); return id }

// accessLog logs one line per request, without keys or bodies.
func (s *Server) accessLog(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		ctx := c.Request().Context()
		latency, status := time.Since(start), c.Response().Status
		attrs := []slog.Attr{
			slog.String("request_id", requestID(c)), slog.String("method", c.Request().Method),
			slog.String("path", loggedPath(c)), slog.Int("status", status),
			slog.Duration("latency", latency),
		}
		op := operationID(ctx)
		if op != "" {
			attrs = append(attrs, slog.String("operation_id", op))
		} else {
			op = "other" // health checks, metrics, unknown paths: one label, bounded cardinality
		}
		s.metrics.ObserveRequest(op, status, latency)
		if p, ok := auth.FromContext(ctx); ok {
			attrs = append(attrs, slog.String("account_id", p.AccountID.String()))
		}
		s.log.LogAttrs(ctx, slog.LevelInfo, "request", attrs...)
		return nil
	}
}

// loggedPath is the request's path for the access log. A path that carries a capability (the
// consent page's token opens the page to anyone) is logged as its route.
func loggedPath(c echo.Context) string {
	if c.Param("token") != "" {
		return c.Path()
	}
	return c.Request().URL.Path
}

// apiRoute attaches the spec's route to requests of the public API; other paths skip the
// API middleware chain.
func (s *Server) apiRoute(next echo.HandlerFunc) echo.HandlerFunc {
	// built once: the chain and the validator's options are the same for every request.
	api := s.bodyLimit(s.contentType(s.authenticate(s.rateLimit(s.batchSlot(s.validate(s.idempotent(next)))))))
	return func(c echo.Context) error {
		route := s.routes.lookup(c)
		if route == nil {
			if s.routes.isSpecPath(c) {
				return errMethodNotAllowed
			}
			return next(c)
		}
		r := c.Request()
		rq := &request{route: route, client: client{ip: c.RealIP(), userAgent: r.UserAgent(),
			accept: r.Header.Get("Accept"), acceptEncoding: r.Header.Get("Accept-Encoding")}}
		ctx := context.WithValue(r.Context(), requestKey{}, rq)
		if s.cfg.RequestTimeout == 0 || route.Operation.OperationID == exportOperation {
			c.SetRequest(r.WithContext(ctx))
			return api(c)
		}
		ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
		defer cancel()
		c.SetRequest(r.WithContext(ctx))
		if err := api(c); err != nil {
			c.Error(err) // answered before the deadline's context is cancelled: the answer may still read (a merged contact's hint)
		}
		return nil
	}
}

// exportOperation streams for as long as its client keeps reading: RequestTimeout does not
// bound it (ExportStall bounds each of its writes).
const exportOperation = "exportContacts"

// bodyLimit refuses bodies over the limit before anything reads them.
func (s *Server) bodyLimit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		limit := s.cfg.MaxBodyBytes
		if s.routes.batch[routeOf(r.Context())] {
			limit = s.cfg.MaxBatchBodyBytes
		}
		if r.ContentLength > limit {
			return errTooLarge(limit)
		}
		r.Body = http.MaxBytesReader(c.Response(), r.Body, limit)
		return next(c)
	}
}

// contentType refuses a body that is not JSON on operations that take one.
func (s *Server) contentType(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		route := routeOf(r.Context())
		hasBody := r.ContentLength > 0 || r.ContentLength < 0
		if hasBody && route.Operation.RequestBody != nil && !isJSON(r.Header.Get("Content-Type")) {
			return errMediaType
		}
		return next(c)
	}
}

// authenticate resolves x-api-key to the calling account, except on the operations the spec
// declares public (security: []).
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		route := routeOf(c.Request().Context())
		if sec := route.Operation.Security; sec != nil && len(*sec) == 0 {
			return next(c)
		}
		client, _ := netip.ParseAddr(c.RealIP())
		p, err := s.auth.Authenticate(c.Request().Context(), c.Request().Header.Get("x-api-key"), client)
		if err != nil {
			return err
		}
		if len(p.Networks) > 0 { // most keys may be used from anywhere: no address to parse
			if addr, err := netip.ParseAddr(c.RealIP()); err != nil || !p.From(addr) {
				return apperr.New(apperr.KindForbidden, "Forbidden",
					fmt.Sprintf("this API key may not be used from %s: it is limited to its allowed networks", c.RealIP()))
			}
		}
		for _, scope := range s.routes.scopes[route] {
			if !p.Has(scope) {
				return apperr.New(apperr.KindForbidden, "Forbidden", "this API key lacks the scope "+scope)
			}
		}
		c.SetRequest(c.Request().WithContext(auth.WithPrincipal(c.Request().Context(), p)))
		return next(c)
	}
}

func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}
