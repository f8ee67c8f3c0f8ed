package apicore

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/contactd/contactd/internal/apperr"
)

var errTrailingData = errors.New("data after the JSON value")

// DecodeJSON decodes one JSON value into JSON values as kin-openapi's request validator does
// (numbers kept as json.Number, so integers are checked exactly), and refuses anything after
// the value: what is validated is the whole body.
func DecodeJSON(body []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errTrailingData
	}
	return v, nil
}

// NULs lists, as field errors under prefix (body, body.contacts.3), every string of a decoded
// JSON value that holds a NUL character, and every object whose key does: PostgreSQL's text
// cannot store one, so a request carrying one is refused here, by field, before any statement
// is sent (it would otherwise fail the statement, and with it a group of other requests').
func NULs(v any, prefix string) FieldErrors {
	if !hasNUL(v) { // nearly every body: walked once, no path built
		return nil
	}
	var out FieldErrors
	collectNULs(v, prefix, &out)
	slices.SortFunc(out, func(a, b apperr.FieldError) int { return strings.Compare(a.Field, b.Field) })
	return out
}

// hasNUL reports whether a string or key of v holds a NUL.
func hasNUL(v any) bool {
	switch x := v.(type) {
	case string:
		return strings.IndexByte(x, 0) >= 0
	case []any:
		return slices.ContainsFunc(x, hasNUL)
	case map[string]any:
		for k, item := range x {
			if strings.IndexByte(k, 0) >= 0 || hasNUL(item) {
				return true
			}
		}
	}
	return false
}

func collectNULs(v any, path string, out *FieldErrors) {
	switch x := v.(type) {
	case string:
		if strings.IndexByte(x, 0) >= 0 {
			*out = append(*out, apperr.Field(path, "encoding", "must not contain NUL (\\u0000)"))
		}
	case []any:
		for i, item := range x {
			collectNULs(item, path+"."+strconv.Itoa(i), out)
		}
	case map[string]any:
		for k, item := range x {
			if strings.IndexByte(k, 0) >= 0 {
				*out = append(*out, apperr.Field(path+"."+k, "encoding", "a key must not contain NUL (\\u0000)"))
				continue
			}
			collectNULs(item, path+"."+k, out)
		}
	}
}

// FieldErrors are violations found outside kin-openapi's schemas, reported with its own.
type FieldErrors []apperr.FieldError

func (f FieldErrors) Error() string {
	msgs := make([]string, len(f))
	for i, e := range f {
		msgs[i] = e.Field + ": " + e.Message
	}
	return strings.Join(msgs, "; ")
}
