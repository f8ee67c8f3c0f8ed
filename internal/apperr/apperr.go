// Package apperr is the one error taxonomy of contactd. Domain packages return *Error values;
// the HTTP layer turns each Kind into a status and the Error into the documented body, in one
// place. It imports nothing internal so every package can use it.
package apperr

import (
	"errors"
	"fmt"
	"time"
)

// Kind decides the HTTP status of an error; Code is the machine-readable name clients see.
type Kind uint8

// The kinds of failure, each with one HTTP status.
const (
	KindInternal      Kind = iota // 500
	KindInvalid                   // 400
	KindNotFound                  // 404
	KindUnauthorized              // 401
	KindRateLimited               // 429
	KindTooLarge                  // 413
	KindMediaType                 // 415
	KindMethod                    // 405
	KindUnavailable               // 503
	KindConflict                  // 409
	KindUnprocessable             // 422
	KindForbidden                 // 403
)

// FieldError is one violation of a request's rules.
type FieldError struct {
	Field   string `json:"field"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Error is a failure with a client-facing code and message. Its message must never carry
// internals: those go in Cause, which only the logs see.
type Error struct {
	Kind    Kind
	Code    string
	Message string
	Fields  []FieldError
	// ContactID names the existing contact of a DuplicateContact.
	ContactID string
	// RetryAfter, on a refusal of KindRateLimited, is sent as Retry-After (whole seconds).
	RetryAfter time.Duration
	Cause      error
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Cause)
	}
	return e.Code + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Cause }

// Is matches errors of the same Code, so sentinel values work with errors.Is.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// New makes an error of a kind with a code and message.
func New(kind Kind, code, message string) *Error {
	return &Error{Kind: kind, Code: code, Message: message}
}

// Invalid is the 400 InvalidRequest for the given violations.
func Invalid(fields ...FieldError) *Error {
	msg := "the request is invalid"
	for i, f := range fields {
		if i == 0 {
			msg += ": "
		} else {
			msg += "; "
		}
		msg += f.Field + ": " + f.Message
	}
	return &Error{Kind: KindInvalid, Code: "InvalidRequest", Message: msg, Fields: fields}
}

// Field builds a FieldError.
func Field(field, reason, message string) FieldError {
	return FieldError{Field: field, Reason: reason, Message: message}
}

// Generic errors that the store and the HTTP layer produce.
var (
	// ErrNoRows is what the store returns when a query finds nothing; domain packages turn
	// it into their own not-found code.
	ErrNoRows      = New(KindNotFound, "NotFound", "not found")
	ErrUnavailable = New(KindUnavailable, "ServiceUnavailable", "the service is temporarily unavailable; retry later")
	ErrInternal    = New(KindInternal, "InternalError", "internal error")
)

// As returns err as an *Error, wrapping anything unexpected as an internal error.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Kind: KindInternal, Code: ErrInternal.Code, Message: ErrInternal.Message, Cause: err}
}
