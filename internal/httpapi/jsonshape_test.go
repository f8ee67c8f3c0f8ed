package httpapi_test

import (
	"strings"
	"testing"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/testkit"
)

func TestPathologicalJSONRefusedEarly(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	id := createContact(t, a, key, map[string]any{"email": "deep@example.com"}).Contact.ContactId
	deep := `{"type":"EmailOpen","details":` + strings.Repeat(`{"a":`, 40) + `1` + strings.Repeat(`}`, 40) + `}`
	long := `{"tags":[` + strings.TrimSuffix(strings.Repeat(`"x",`, 5000), ",") + `]}`
	okNested := `{"type":"EmailOpen","details":` + strings.Repeat(`{"a":`, 10) + `[1,2,3]` + strings.Repeat(`}`, 10) + `}`
	cases := []struct {
		path, body, reason string
		status             int
	}{
		{"/public/v1/contact/" + id + "/activity", deep, "maxDepth", 400},
		{"/public/v1/contact/" + id + "/tags", long, "maxItems", 400},
		{"/public/v1/contact/" + id + "/activity", `[` + strings.Repeat(`[`, 30000) + strings.Repeat(`]`, 30000) + `]`, "maxDepth", 400},
		{"/public/v1/contact/" + id + "/activity", okNested, "", 200},
	}
	for _, tc := range cases {
		r := a.Do("POST", tc.path, key, tc.body)
		if r.Status != tc.status {
			t.Errorf("%.40s...: %d %.200s", tc.body, r.Status, r.Body)
			continue
		}
		if tc.status == 400 {
			if e := r.Error(t); e.Code != api.ErrorCodeInvalidRequest || (*e.Data.Errors)[0].Reason != tc.reason {
				t.Errorf("%.40s...: %s", tc.body, r.Body)
			}
		}
	}
}
