package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/contactd/contactd/internal/apicore"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/auth"
	"github.com/contactd/contactd/internal/contact"
)

var statusOf = map[apperr.Kind]int{
	apperr.KindInternal:      http.StatusInternalServerError,
	apperr.KindInvalid:       http.StatusBadRequest,
	apperr.KindNotFound:      http.StatusNotFound,
	apperr.KindUnauthorized:  http.StatusUnauthorized,
	apperr.KindRateLimited:   http.StatusTooManyRequests,
	apperr.KindTooLarge:      http.StatusRequestEntityTooLarge,
	apperr.KindMediaType:     http.StatusUnsupportedMediaType,
	apperr.KindMethod:        http.StatusMethodNotAllowed,
	apperr.KindUnavailable:   http.StatusServiceUnavailable,
	apperr.KindForbidden:     http.StatusForbidden,
	apperr.KindConflict:      http.StatusConflict,
	apperr.KindUnprocessable: http.StatusUnprocessableEntity,
}

var (
	errRouteNotFound    = apperr.New(apperr.KindNotFound, "NotFound", "no such endpoint")
	errMethodNotAllowed = apperr.New(apperr.KindMethod, "MethodNotAllowed", "method not allowed on this endpoint")
)

// errPastDeadline is the answer of a request whose work ran past Config.RequestTimeout and was
// stopped: a statement under way was cancelled and its transaction rolled back; a write
// already committed (one sent in a group just before) stays.
func errPastDeadline(limit time.Duration) *apperr.Error {
	return &apperr.Error{Kind: apperr.KindUnavailable, Code: apperr.ErrUnavailable.Code, RetryAfter: time.Second,
		Message: fmt.Sprintf("the request ran past its deadline of %s and was stopped: retry, or send less in one request", limit)}
}

// statusClientClosed is the status of a request whose client went away before its answer.
const statusClientClosed = 499

// errorHandler is the one place where an error becomes an HTTP response: every failure,
// from middleware, validation, binding or a handler, leaves through here.
func (s *Server) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	stopped := c.Request().Context().Err()
	if errors.Is(err, context.Canceled) && errors.Is(stopped, context.Canceled) {
		// the client went away before its answer: nothing failed here, and nobody reads the
		// answer (499, as proxies log it)
		s.log.InfoContext(c.Request().Context(), "request abandoned by its client", slog.String("request_id", requestID(c)))
		_ = c.NoContent(statusClientClosed)
		return
	}
	e := s.classify(err)
	if errors.Is(stopped, context.DeadlineExceeded) {
		// whatever failed first, it failed because the request's time was up
		e = errPastDeadline(s.cfg.RequestTimeout)
	}
	if e.Code == contact.ErrNotFound.Code && e.ContactID == "" {
		e = s.mergedHint(c, e)
	}
	status := statusOf[e.Kind]
	if e.Kind == apperr.KindInternal {
		s.log.ErrorContext(c.Request().Context(), "request failed",
			slog.String("request_id", requestID(c)), slog.Any("error", err))
		e = &apperr.Error{Kind: e.Kind, Code: e.Code, Message: "internal error; request id " + requestID(c)}
	}
	if e.RetryAfter > 0 {
		c.Response().Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
	}
	body := apicore.ErrorBody(e)
	if c.Request().Method == http.MethodHead {
		err = c.NoContent(status)
	} else {
		err = c.JSON(status, body)
	}
	if err != nil {
		s.log.WarnContext(c.Request().Context(), "write error response", slog.Any("error", err))
	}
}

// mergedHint names, in a ContactDoesNotExist about the id of a duplicate merged into another
// contact, the contact it was merged into.
func (s *Server) mergedHint(c echo.Context, e *apperr.Error) *apperr.Error {
	raw := c.Param("contactId")
	if raw == "" {
		raw = c.QueryParam("contactId")
	}
	p, ok := auth.FromContext(c.Request().Context())
	if raw == "" || !ok {
		return e
	}
	into, err := s.contacts.MergedInto(c.Request().Context(), p.AccountID, raw)
	if err != nil {
		return e
	}
	hint := *e
	hint.ContactID, hint.Message = into.String(), "contact was merged into "+into.String()
	return &hint
}

// classify turns any error into an apperr.Error, including Echo's own (routing, binding).
func (s *Server) classify(err error) *apperr.Error {
	var he *echo.HTTPError
	if errors.As(err, &he) {
		switch he.Code {
		case http.StatusNotFound:
			return errRouteNotFound
		case http.StatusMethodNotAllowed:
			return errMethodNotAllowed
		case http.StatusRequestEntityTooLarge:
			return errTooLarge(s.cfg.MaxBodyBytes)
		case http.StatusUnsupportedMediaType:
			return errMediaType
		case http.StatusBadRequest:
			// a parameter or a body the spec accepted but Go could not bind (should not happen)
			if msg, ok := he.Message.(string); ok {
				if name, found := strings.CutPrefix(msg, "Invalid format for parameter "); found {
					name, _, _ = strings.Cut(name, ":")
					return apperr.Invalid(apperr.Field("query."+name, "format", "the value of "+name+" is not in the expected format"))
				}
			}
			return apperr.Invalid(apperr.Field("body", "type", "the body does not match the expected types"))
		}
	}
	return apperr.As(err)
}
