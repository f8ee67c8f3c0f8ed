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
		err := checkJSONShape([]byte(tc.body))
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
