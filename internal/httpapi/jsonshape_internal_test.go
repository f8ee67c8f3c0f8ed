package httpapi

import (
	"errors"
	"strings"
	"testing"

	"github.com/contactd/contactd/internal/apperr"
)

func TestCheckJSONShape(t *testing.T) {
	t.Parallel()
	nested := func(n int) string { return strings.Repeat(`{"a":`, n-1) + `[1]` + strings.Repeat(`}`, n-1) }
	items := func(n int) string { return `{"tags":[` + strings.TrimSuffix(strings.Repeat(`"x",`, n), ",") + `]}` }
	for _, tc := range []struct {
		name, body, reason string
	}{
		{"at the depth limit", nested(MaxJSONDepth), ""},
		{"one level deeper", nested(MaxJSONDepth + 1), "maxDepth"},
		{"arrays count as levels", strings.Repeat(`[`, MaxJSONDepth+1) + strings.Repeat(`]`, MaxJSONDepth+1), "maxDepth"},
		{"at the item limit", items(MaxJSONArrayItems), ""},
		{"one item more", items(MaxJSONArrayItems + 1), "maxItems"},
		{"items of a nested array", `{"a":[[` + strings.Repeat(`1,`, MaxJSONArrayItems) + `1]]}`, "maxItems"},
		{"commas of objects are not items", `[{` + strings.TrimSuffix(strings.Repeat(`"k":1,`, 2*MaxJSONArrayItems), ",") + `}]`, ""},
		{"brackets and commas in strings", `{"a":"` + strings.Repeat(`[{,`, 100) + `"}`, ""},
		{"escaped quotes do not end strings", `{"a":"\"` + strings.Repeat(`[`, 100) + `\\\""}`, ""},
		{"an escaped backslash ends before the quote", `{"a":"\\"` + `,"b":` + nested(MaxJSONDepth) + `}`, "maxDepth"},
		{"malformed: left to the validator", `]]]}}{"a":`, ""},
	} {
		_, err := checkJSONShape([]byte(tc.body))
		var got string
		var ae *apperr.Error
		if errors.As(err, &ae) && len(ae.Fields) > 0 {
			got = ae.Fields[0].Reason
		} else if err != nil {
			got = err.Error()
		}
		if got != tc.reason {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.reason)
		}
	}
}

// The scan counts a batch's items for the rate limiter: the longest array that is a member of
// the top-level object, and nothing else.
func TestCheckJSONShapeCountsTheMemberArraysItems(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]int{
		`{"contacts":[]}`:         0,
		"{\"contacts\":[ \n\t ]}": 0,
		`{"contacts":[{}]}`:       1,
		`{"contacts":[ {} ]}`:     1,
		`{"contacts":["a,b"]}`:    1,
		`{"mode":"upsert","contacts":[{"tags":["a","b","c"]},{"a":[1,2]}, {"b":{"c":[1,2,3,4]}}]}`: 3,
		`{"a":[1],"b":[1,2]}`:    2,
		`{"a":{"b":[1,2,3]}}`:    0,
		`[1,2,3]`:                0,
		`[[1,2,3]]`:              0,
		`{"contacts":[1,2,3`:     0, // never closed: malformed, the validator answers it
		`{"contacts":[[1,2],3]}`: 2,
	} {
		if got, err := checkJSONShape([]byte(body)); err != nil || got != want {
			t.Errorf("%s: %d items (%v), want %d", body, got, err, want)
		}
	}
}
