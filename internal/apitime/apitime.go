// Package apitime is the API's timestamp: UTC, RFC 3339 with exactly three fractional digits
// and Z, on every field of every response, so clients can compare timestamps as strings.
package apitime

import (
	"fmt"
	"time"
)

// Layout is the one timestamp format of the API.
const Layout = "2006-01-02T15:04:05.000Z"

// Time marshals as Layout and unmarshals any RFC 3339 timestamp.
type Time struct{ time.Time }

// From converts t, truncating to milliseconds as the API shows it.
func From(t time.Time) Time { return Time{t.UTC().Truncate(time.Millisecond)} }

// Ptr is From for optional fields: nil stays nil.
func Ptr(t *time.Time) *Time {
	if t == nil {
		return nil
	}
	v := From(*t)
	return &v
}

// String formats t as Layout.
func (t Time) String() string { return t.UTC().Format(Layout) }

// MarshalText formats t as Layout.
func (t Time) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// MarshalJSON formats t as a JSON string in Layout.
func (t Time) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, len(Layout)+2)
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, Layout)
	return append(b, '"'), nil
}

// UnmarshalText parses an RFC 3339 timestamp with any precision and offset.
func (t *Time) UnmarshalText(b []byte) error {
	v, err := time.Parse(time.RFC3339Nano, string(b))
	if err != nil {
		return fmt.Errorf("not an RFC 3339 timestamp: %q", b)
	}
	t.Time = v.UTC()
	return nil
}

// UnmarshalJSON parses a JSON string holding an RFC 3339 timestamp.
func (t *Time) UnmarshalJSON(b []byte) error {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return fmt.Errorf("timestamp must be a JSON string")
	}
	return t.UnmarshalText(b[1 : len(b)-1])
}

// Bind parses a timestamp given as a query parameter (oapi-codegen's runtime.Binder).
func (t *Time) Bind(src string) error { return t.UnmarshalText([]byte(src)) }
