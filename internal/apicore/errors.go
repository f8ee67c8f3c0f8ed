package apicore

import (
	"errors"
	"regexp"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/contact"
)

// FormatOptions registers the string formats kin-openapi does not check by itself; tests
// validating responses use the same set.
func FormatOptions() []openapi3.SchemaValidationOption {
	return []openapi3.SchemaValidationOption{
		openapi3.WithStringFormatValidator("email", openapi3.NewCallbackValidator(contact.ValidateEmail)),
	}
}

// ErrorBody is the documented error body of e.
func ErrorBody(e *apperr.Error) api.Error {
	body := api.Error{Code: api.ErrorCode(e.Code), Message: e.Message}
	if len(e.Fields) > 0 || e.ContactID != "" {
		body.Data = &api.ErrorData{}
		if len(e.Fields) > 0 {
			fields := make([]api.FieldError, len(e.Fields))
			for i, f := range e.Fields {
				fields[i] = api.FieldError{Field: f.Field, Reason: f.Reason, Message: f.Message}
			}
			body.Data.Errors = &fields
		}
		if e.ContactID != "" {
			body.Data.ContactId = &e.ContactID
		}
	}
	return body
}

// Fields flattens kin-openapi's error tree into one FieldError per violation, each field
// under prefix (body, body.contacts.3). It switches on the concrete type: errors.As would
// look through a RequestError into its children and lose the "body"/"query.x" prefix the
// RequestError carries.
func Fields(err error, prefix string) []apperr.FieldError {
	var out []apperr.FieldError
	collectFields(err, prefix, &out)
	return out
}

func collectFields(err error, prefix string, out *[]apperr.FieldError) {
	switch e := err.(type) {
	case openapi3.MultiError:
		for _, child := range e {
			collectFields(child, prefix, out)
		}
	case *openapi3filter.RequestError:
		field := "body"
		if p := e.Parameter; p != nil {
			field = p.In + "." + p.Name
		}
		switch e.Err.(type) {
		case openapi3.MultiError, *openapi3.SchemaError:
			collectFields(e.Err, field, out)
		default:
			*out = append(*out, apperr.Field(field, requestReason(e), requestMessage(e)))
		}
	case *openapi3.SchemaError:
		*out = append(*out, schemaField(e, prefix))
	case FieldErrors:
		*out = append(*out, e...)
	default:
		*out = append(*out, apperr.Field(prefix, "invalid", err.Error()))
	}
}

var unsupportedProperty = regexp.MustCompile(`^property "(.*)" is unsupported$`)

func schemaField(e *openapi3.SchemaError, prefix string) apperr.FieldError {
	field := prefix
	if ptr := e.JSONPointer(); len(ptr) > 0 {
		field += "." + strings.Join(ptr, ".")
	}
	if m := unsupportedProperty.FindStringSubmatch(e.Reason); m != nil {
		return apperr.Field(field+"."+m[1], "additionalProperties", "unknown or read-only field")
	}
	if e.SchemaField == "required" {
		return apperr.Field(field, "required", "is required")
	}
	return apperr.Field(field, e.SchemaField, e.Reason)
}

func requestReason(e *openapi3filter.RequestError) string {
	var parseErr *openapi3filter.ParseError
	switch {
	case errors.Is(e.Err, openapi3filter.ErrInvalidRequired):
		return "required"
	case errors.As(e.Err, &parseErr):
		return "json"
	}
	return "invalid"
}

func requestMessage(e *openapi3filter.RequestError) string {
	if errors.Is(e.Err, openapi3filter.ErrInvalidRequired) {
		return "is required"
	}
	if e.Err != nil {
		return e.Err.Error()
	}
	return e.Reason
}
