package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"testing"

	"golang.org/x/net/http/httpguts"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/testkit"
)

type fuzzOp struct{ method, path, operationID string }

// specOperations lists every operation of the spec, in a stable order.
func specOperations(t testing.TB) []fuzzOp {
	spec, err := api.GetSwagger()
	if err != nil {
		t.Fatal(err)
	}
	var ops []fuzzOp
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			ops = append(ops, fuzzOp{method, path, op.OperationID})
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].operationID < ops[j].operationID })
	return ops
}

var pathParam = regexp.MustCompile(`\{[^}]+\}`)

// FuzzAPI sends random and mutated requests to every operation through the whole stack:
// never a 5xx, every error in the documented body (responses are checked against
// openapi.yaml by testkit), and a rejected request leaves the database as it was.
// `make test` runs the seeds; `make fuzz` explores.
func FuzzAPI(f *testing.F) {
	a := testkit.NewAPI(f)
	_, key := a.Account("acme")
	r := a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "fuzz@example.com", "tags": []string{"a"},
		"address": "1 Main St, Springfield, IL 62704"})
	var created api.CreateContactResult
	if err := json.Unmarshal(r.Body, &created); err != nil || r.Status != 200 {
		f.Fatalf("seed contact: %d %s", r.Status, r.Body)
	}
	id := created.Contact.ContactId
	ops := specOperations(f)
	for i := range ops {
		f.Add(uint8(i), id, "", `{"tags":["b"]}`, "application/json")
		f.Add(uint8(i), "not-a-uuid", "limit=0&cursor=%ff", `{"email":`, "application/json")
		f.Add(uint8(i), id, "contactId="+id+"&emailId=FUZZ%40example.com", `{"name":null,"phone":"1","x":1}`, "application/merge-patch+json")
		f.Add(uint8(i), "01939d3c-0000-7000-8000-000000000000", "", `[[[[]]]]`, "text/plain")
		f.Add(uint8(i), id, "", `{"type":"Unsubscribe","occurredAt":"2026-13-40T00:00:00Z","details":{"a":[1,{"b":null}]}}`, "application/json; charset=utf-8")
		f.Add(uint8(i), id, "", `{"address":"`+strings.Repeat("9", 200)+`"}`, "")
		f.Add(uint8(i), id, "", "\x00\xff{\"email\":\"a@b.co\"}", "application/json")
		f.Add(uint8(i), "cs_%F1", "emailId=%F1%00&contactId=%C0", "{}", "application/json") // not UTF-8: once a 500
	}
	f.Fuzz(func(t *testing.T, opIndex uint8, pathID, query, body, contentType string) {
		op := ops[int(opIndex)%len(ops)]
		path := pathParam.ReplaceAllString(op.path, url.PathEscape(pathID))
		if query != "" {
			path += "?" + query
		}
		if _, err := url.ParseRequestURI(a.URL + path); err != nil || !printableASCII(path) || !httpguts.ValidHeaderFieldValue(contentType) {
			return // not an HTTP request a client could send: net/http itself answers those
		}
		before := dbState(t, a)
		r := a.With(t).Do(op.method, path, key, body, "Content-Type", contentType)
		if r.Status >= 500 {
			t.Fatalf("%s %s %q -> %d %s", op.method, path, body, r.Status, r.Body)
		}
		if r.Status >= 400 {
			if after := dbState(t, a); after != before {
				t.Fatalf("%s %s %q -> %d changed the database:\n%s\n%s", op.method, path, body, r.Status, before, after)
			}
		}
	})
}

// printableASCII reports a request target a client can send as is (the rest is percent-encoded).
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f || s[i] == '#' {
			return false
		}
	}
	return true
}

// dbState summarises every table a request can change.
func dbState(t *testing.T, a *testkit.API) string {
	t.Helper()
	var s string
	err := a.Store.Pool.QueryRow(context.Background(), `SELECT concat_ws(' ',
		(SELECT count(*) FROM contacts), (SELECT max(updated_at) FROM contacts),
		(SELECT sum(cardinality(tags)) FROM contacts), (SELECT count(*) FROM properties),
		(SELECT count(*) FROM properties WHERE archived_at IS NOT NULL), (SELECT count(*) FROM activities),
		(SELECT count(*) FROM webhook_subscriptions), (SELECT count(*) FROM webhook_events),
		(SELECT count(*) FROM webhook_deliveries), (SELECT count(*) FROM webhook_attempts))`).Scan(&s)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(s)
}
