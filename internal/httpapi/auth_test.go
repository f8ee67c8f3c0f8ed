package httpapi_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/testkit"
)

// every operation of the spec, with a body it would accept.
// operations is every operation that needs a key, with the scopes it needs (all of them,
// space-separated): a reviewed table,
// kept by hand, so that a scope changed in openapi.yaml (which the server enforces from) fails
// TestScopesFromTheSpec until someone decides it is right.
var operations = []struct {
	method, path, scope string
	body                any
}{
	{"POST", "/public/v1/contact", "contacts:write", map[string]any{"email": "x@example.com"}},
	{"GET", "/public/v1/contact?emailId=x%40example.com", "contacts:read", nil},
	{"PUT", "/public/v1/contact/01939d3c-0000-7000-8000-000000000000/tags", "contacts:write", map[string]any{"tags": []string{"a"}}},
	{"POST", "/public/v1/contact/01939d3c-0000-7000-8000-000000000000/tags", "contacts:write", map[string]any{"tags": []string{"a"}}},
	{"DELETE", "/public/v1/contact/01939d3c-0000-7000-8000-000000000000/tags", "contacts:write", map[string]any{"tags": []string{"a"}}},
	{"PATCH", "/public/v1/contact/01939d3c-0000-7000-8000-000000000000", "contacts:write", map[string]any{"name": "x"}},
	{"DELETE", "/public/v1/contact/01939d3c-0000-7000-8000-000000000000", "contacts:write", nil},
	{"POST", "/public/v1/contact/01939d3c-0000-7000-8000-000000000000/erase", "contacts:erase", nil},
	{"POST", "/public/v1/contact/01939d3c-0000-7000-8000-000000000000/property", "contacts:write", map[string]any{"address": "1 Main St, Springfield, IL 62704"}},
	{"POST", "/public/v1/contact/property/01939d3c-0000-7000-8000-000000000000/archive", "contacts:write", nil},
	{"POST", "/public/v1/contact/01939d3c-0000-7000-8000-000000000000/activity", "contacts:write", map[string]any{"type": "EmailOpen"}},
	{"POST", "/public/v1/webhooks", "webhooks:write events:read", map[string]any{"url": "https://h.example.com", "eventType": "TagsAdded"}},
	{"GET", "/public/v1/webhooks", "webhooks:read", nil},
	{"DELETE", "/public/v1/webhooks/01939d3c-0000-7000-8000-000000000000", "webhooks:write", nil},
	{"GET", "/public/v1/webhooks/01939d3c-0000-7000-8000-000000000000/deliveries", "webhooks:read", nil},
	{"POST", "/public/v1/webhooks/01939d3c-0000-7000-8000-000000000000/deliveries/01939d3c-0000-7000-8000-000000000000/redeliver", "webhooks:write", nil},
	{"POST", "/public/v1/webhooks/01939d3c-0000-7000-8000-000000000000/secret", "webhooks:write", nil},
	{"POST", "/public/v1/webhooks/01939d3c-0000-7000-8000-000000000000/test", "webhooks:write", nil},
	{"PATCH", "/public/v1/webhooks/01939d3c-0000-7000-8000-000000000000", "webhooks:write", map[string]any{"maxDeliveriesPerSecond": 5}},
	{"POST", "/public/v1/webhooks/01939d3c-0000-7000-8000-000000000000/filter-test", "webhooks:read", map[string]any{"filter": map[string]any{"eventType": "TagsAdded"}}},
	{"GET", "/public/v1/event-types", "webhooks:read", nil},
	{"GET", "/public/v1/contacts", "contacts:read", nil},
	{"GET", "/public/v1/contacts/export", "contacts:read", nil},
	{"POST", "/public/v1/contacts/batch", "contacts:write", map[string]any{"contacts": []any{map[string]any{"email": "x@example.com"}}}},
	{"GET", "/public/v1/contacts/duplicates", "contacts:read", nil},
	{"POST", "/public/v1/contacts/merge", "contacts:write", map[string]any{"primaryContactId": "01939d3c-0000-7000-8000-000000000000",
		"duplicateContactIds": []string{"01939d3c-0000-7000-8000-000000000001"}}},
	{"GET", "/public/v1/events", "events:read", nil},
	{"GET", "/public/v1/events/01939d3c-0000-7000-8000-000000000000", "events:read", nil},
	{"POST", "/public/v1/webhooks/01939d3c-0000-7000-8000-000000000000/replay", "webhooks:write events:read", map[string]any{"since": "2026-11-20T00:00:00.000Z", "until": "2026-11-21T00:00:00.000Z"}},
	{"POST", "/public/v1/fields", "contacts:write", map[string]any{"key": "tier", "label": "Tier", "type": "text"}},
	{"GET", "/public/v1/fields", "contacts:read", nil},
	{"GET", "/public/v1/fields/tier", "contacts:read", nil},
	{"PATCH", "/public/v1/fields/tier", "contacts:write", map[string]any{"label": "Tier"}},
	{"POST", "/public/v1/fields/tier/archive", "contacts:write", nil},
	{"POST", "/public/v1/segments", "contacts:write", map[string]any{"name": "S", "filter": map[string]any{"groups": []any{
		map[string]any{"conditions": []any{map[string]any{"attribute": "name", "operator": "exists"}}}}}}},
	{"GET", "/public/v1/segments", "contacts:read", nil},
	{"GET", "/public/v1/segments/01939d3c-0000-7000-8000-000000000000", "contacts:read", nil},
	{"PATCH", "/public/v1/segments/01939d3c-0000-7000-8000-000000000000", "contacts:write", map[string]any{"name": "T"}},
	{"DELETE", "/public/v1/segments/01939d3c-0000-7000-8000-000000000000", "contacts:write", nil},
	{"GET", "/public/v1/segments/01939d3c-0000-7000-8000-000000000000/contacts", "contacts:read", nil},
	{"PUT", "/public/v1/segments/01939d3c-0000-7000-8000-000000000000/contacts/01939d3c-0000-7000-8000-000000000000", "contacts:write", nil},
	{"DELETE", "/public/v1/segments/01939d3c-0000-7000-8000-000000000000/contacts/01939d3c-0000-7000-8000-000000000000", "contacts:write", nil}}

// The list above names every operation that needs a key, so a new endpoint cannot skip the
// 401 matrix; the public ones (security: []) are the only exceptions.
func TestOperationsCoverSpec(t *testing.T) {
	spec, err := api.GetSwagger()
	if err != nil {
		t.Fatal(err)
	}
	for path, item := range spec.Paths.Map() {
		re := regexp.MustCompile("^" + regexp.MustCompile(`\{[^}]+\}`).ReplaceAllString(path, "[^/]+") + `(\?.*)?$`)
		for method, op := range item.Operations() {
			if op.Security != nil && len(*op.Security) == 0 {
				continue
			}
			found := false
			for _, o := range operations {
				found = found || (o.method == method && re.MatchString(o.path))
			}
			if !found {
				t.Errorf("%s %s (%s) is missing from the operations list", method, path, op.OperationID)
			}
		}
	}
}

func TestUnauthorized(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	// an unknown key is answered from memory only while the key listener is up; before, each
	// request looks it up, and past auth.MaxFailedLookupsPer10s lookups the address is refused
	testkit.Eventually(t, "the key listener is up", a.Svc.Auth.Caching)
	_, key := a.Account("acme")
	revoked := func() string {
		id, _ := a.Account("gone")
		k, err := a.Svc.Auth.CreateKey(context.Background(), id, "old")
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Svc.Auth.RevokeKey(context.Background(), k[:11]); err != nil {
			t.Fatal(err)
		}
		return k
	}()
	keys := map[string]string{
		"missing":   "",
		"malformed": "hello",
		"unknown":   "ck_" + strings.Repeat("A", 43),
		"mangled":   key[:len(key)-1] + "!",
		"revoked":   revoked,
	}
	for _, op := range operations {
		for name, k := range keys {
			// an invalid body must not win over the missing key.
			r := a.Do(op.method, op.path, k, op.body)
			if e := r.Error(t); r.Status != http.StatusUnauthorized || e.Code != api.ErrorCodeUnauthorized {
				t.Errorf("%s %s with %s key: %d %s", op.method, op.path, name, r.Status, r.Body)
			}
		}
	}
	if r := a.Do("POST", "/public/v1/contact", "", `{"bad json`); r.Status != 401 {
		t.Errorf("no key and bad body: %d, want 401", r.Status)
	}
	var hashes int
	if err := a.Store.Pool.QueryRow(context.Background(), "SELECT count(*) FROM api_keys WHERE position($1::bytea in key_hash) > 0 OR prefix = $2", []byte(key), key).Scan(&hashes); err != nil {
		t.Fatal(err)
	}
	if hashes != 0 {
		t.Errorf("the key is stored in clear")
	}
}

func TestTransportErrors(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	big := `{"email":"big@example.com","name":"` + strings.Repeat("x", 70_000) + `"}`
	tests := []struct {
		name, method, path string
		body               any
		headers            []string
		status             int
		code               api.ErrorCode
	}{
		{"too large", "POST", "/public/v1/contact", big, nil, 413, api.ErrorCodePayloadTooLarge},
		{"text/plain", "POST", "/public/v1/contact", `{"email":"a@example.com"}`, []string{"Content-Type", "text/plain"}, 415, api.ErrorCodeUnsupportedMediaType},
		{"form", "PUT", "/public/v1/contact/x/tags", `tags=a`, []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, api.ErrorCodeUnsupportedMediaType},
		{"malformed JSON", "POST", "/public/v1/contact", `{"email":`, nil, 400, api.ErrorCodeInvalidRequest},
		{"JSON array", "POST", "/public/v1/contact", `[1]`, nil, 400, api.ErrorCodeInvalidRequest},
		{"empty body", "POST", "/public/v1/webhooks", ``, nil, 400, api.ErrorCodeInvalidRequest},
		{"unknown endpoint", "GET", "/public/v1/nope", nil, nil, 404, api.ErrorCodeNotFound},
		{"wrong method", "DELETE", "/public/v1/contact", nil, nil, 405, api.ErrorCodeMethodNotAllowed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := a.Do(tc.method, tc.path, key, tc.body, tc.headers...)
			if e := r.Error(t); r.Status != tc.status || e.Code != tc.code {
				t.Errorf("got %d %s, want %d %s", r.Status, r.Body, tc.status, tc.code)
			}
		})
	}
	var n int
	if err := a.Store.Pool.QueryRow(context.Background(), "SELECT count(*) FROM contacts").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("refused requests stored %d contacts", n)
	}
}

func TestRequestID(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	r := a.Do("GET", "/public/v1/webhooks", "", nil, "X-Request-Id", "abc-123")
	if got := r.Header.Get("X-Request-Id"); got != "abc-123" {
		t.Errorf("X-Request-Id = %q, want the client's echoed", got)
	}
	r = a.Do("GET", "/public/v1/webhooks", "", nil, "X-Request-Id", "bad id with spaces")
	if got := r.Header.Get("X-Request-Id"); got == "" || strings.Contains(got, " ") {
		t.Errorf("X-Request-Id = %q, want a generated one", got)
	}
}
