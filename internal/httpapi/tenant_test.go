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

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/auth"
	"github.com/contactd/contactd/internal/testkit"
)

// The tenant matrix: for every operation of openapi.yaml, account B using account A's ids
// gets exactly what an unknown id gets, and A's data is unchanged afterwards. Operations are
// enumerated from the spec with their request examples, so a new endpoint cannot escape.
func TestTenantMatrix(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	accountA, keyA := a.Account("a")
	_, keyB := a.Account("b")
	tenantMatrix(t, a, accountA, keyA, keyB)
}

// The same between an account's live data and its sandbox, both ways: test keys act in the
// sandbox, an account of its own.
func TestTenantMatrixLiveAndTest(t *testing.T) {
	t.Parallel()
	for _, liveFirst := range []bool{true, false} {
		t.Run(map[bool]string{true: "live data, test key", false: "test data, live key"}[liveFirst], func(t *testing.T) {
			t.Parallel()
			a := testkit.NewAPI(t)
			live, liveKey := a.Account("a")
			testKey, err := a.Svc.Auth.CreateKeyWith(context.Background(), live, auth.KeyOptions{Name: "test", Test: true})
			if err != nil {
				t.Fatal(err)
			}
			sandbox, _, err := a.Svc.Auth.Sandbox(context.Background(), live)
			if err != nil || !strings.HasPrefix(testKey, "ck_test_") {
				t.Fatal(testKey, err)
			}
			if liveFirst {
				tenantMatrix(t, a, live, liveKey, testKey)
			} else {
				tenantMatrix(t, a, sandbox, testKey, liveKey)
			}
		})
	}
}

// tenantMatrix checks that keyB cannot reach what keyA (of accountA) made.
func tenantMatrix(t *testing.T, a *testkit.API, accountA uuid.UUID, keyA, keyB string) {
	c := createContact(t, a, keyA, map[string]any{"email": "mine@example.com", "tags": []string{"secret"},
		"name": "Mine", "address": "1 Main St, Springfield, IL 62704"}).Contact
	var sub api.WebhookSubscription
	subscribe(t, a, keyA, "https://hooks.example.com/a", "TagsAdded").JSON(t, &sub)
	defineField(t, a, keyA, map[string]any{"key": "mine_field", "label": "Mine", "type": "enum",
		"options": []map[string]any{{"value": "gold", "label": "Gold"}}})
	a.Do("POST", "/public/v1/contact/"+c.ContactId+"/tags", keyA, map[string]any{"tags": []string{"more"}}) // a delivery
	var seg api.Segment
	r := a.Do("POST", "/public/v1/segments", keyA, map[string]any{"name": "Mine", "filter": map[string]any{"groups": []any{
		map[string]any{"conditions": []any{map[string]any{"attribute": "customFields.mine_field", "operator": "eq", "value": "gold"}}}}}})
	if r.JSON(t, &seg); r.Status != 200 {
		t.Fatalf("A's segment: %d %s", r.Status, r.Body)
	}
	var deliveryID string
	if err := a.Store.Pool.QueryRow(context.Background(), "SELECT delivery_id::text FROM webhook_deliveries WHERE account_id = $1", accountA).Scan(&deliveryID); err != nil {
		t.Fatal(err)
	}
	var eventID string
	if err := a.Store.Pool.QueryRow(context.Background(), "SELECT event_id::text FROM webhook_events WHERE account_id = $1 LIMIT 1", accountA).Scan(&eventID); err != nil {
		t.Fatal(err)
	}
	unknown := "01939d3c-0000-7000-8000-000000000000"
	ids := map[string][2]string{ // parameter -> A's value, a value nobody has
		"contactId":      {c.ContactId, unknown},
		"propertyId":     {c.Properties[0].PropertyId, unknown},
		"subscriptionId": {sub.SubscriptionId, unknown},
		"deliveryId":     {deliveryID, unknown},
		"eventId":        {eventID, unknown},
		"emailId":        {"mine@example.com", "nobody@example.com"}, // also the email of create bodies
		"fieldKey":       {"mine_field", "nobody_has_this"},
		"segmentId":      {seg.SegmentId, unknown},
	}
	before := snapshot(t, a, keyA, c.ContactId, sub.SubscriptionId)

	// GET contact by email, the one id that travels in the query (before B creates contacts
	// with these emails below).
	rb := a.Do("GET", "/public/v1/contact?emailId=mine%40example.com", keyB, nil)
	ru := a.Do("GET", "/public/v1/contact?emailId=nobody%40example.com", keyB, nil)
	if rb.Status != 404 || string(rb.Body) != string(ru.Body) {
		t.Errorf("getContact by A's email as B: %d %s; unknown: %d %s", rb.Status, rb.Body, ru.Status, ru.Body)
	}
	spec, err := api.GetSwagger()
	if err != nil {
		t.Fatal(err)
	}
	paths := spec.Paths.InMatchingOrder()
	sort.Strings(paths)
	for _, path := range paths {
		item := spec.Paths.Value(path)
		for method, op := range item.Operations() {
			if op.Security != nil && len(*op.Security) == 0 {
				continue // public (the consent page: its token is the credential)
			}
			reqA, reqU := buildRequest(t, path, item, op, ids, 0), buildRequest(t, path, item, op, ids, 1)
			rb := a.Do(method, reqA, keyB, exampleBody(op, ids["emailId"][0], "probe_a"))
			ru := a.Do(method, reqU, keyB, exampleBody(op, ids["emailId"][1], "probe_u"))
			same := rb.Status == ru.Status && (rb.Status >= 300 && string(rb.Body) == string(ru.Body) || rb.Status < 300)
			if !same || rb.Status >= 500 {
				t.Errorf("%s (%s %s) as B with A's ids: %d %s; with unknown ids: %d %s",
					op.OperationID, method, reqA, rb.Status, rb.Body, ru.Status, ru.Body)
			}
		}
	}
	// what lists the account's data shows B none of A's
	for _, path := range []string{"/public/v1/contacts", "/public/v1/contacts?q=mine", "/public/v1/contacts?tag=secret",
		"/public/v1/contacts/export", "/public/v1/events"} {
		// (the feed shows an event once every older transaction of the cluster has ended)
		testkit.Eventually(t, path+" as A to show A's contact", func() bool {
			return strings.Contains(string(a.Do("GET", path, keyA, nil).Body), c.ContactId)
		})
		r := a.Do("GET", path, keyB, nil)
		for _, aID := range []string{c.ContactId, eventID, `"Mine"`, `"secret"`} {
			if r.Status != 200 || strings.Contains(string(r.Body), aID) {
				t.Errorf("%s as B: %d, shows %s of A's: %s", path, r.Status, aID, r.Body)
			}
		}
	}
	if after := snapshot(t, a, keyA, c.ContactId, sub.SubscriptionId); after != before {
		t.Errorf("A's data changed:\nbefore %s\nafter  %s", before, after)
	}
}

// buildRequest fills the operation's path and query parameters with A's ids (which=0) or
// unknown ones (which=1). A parameter the matrix does not know fails the test.
func buildRequest(t *testing.T, path string, item *openapi3.PathItem, op *openapi3.Operation, ids map[string][2]string, which int) string {
	t.Helper()
	params := append(append(openapi3.Parameters{}, item.Parameters...), op.Parameters...)
	q := url.Values{}
	for _, p := range params {
		v, ok := ids[p.Value.Name]
		switch {
		case p.Value.In == "path" && !ok:
			t.Fatalf("%s: path parameter %s is not in the tenant matrix; add it", op.OperationID, p.Value.Name)
		case p.Value.In == "path":
			path = strings.ReplaceAll(path, "{"+p.Value.Name+"}", url.PathEscape(v[which]))
		case p.Value.In == "query" && ok && p.Value.Name == "contactId":
			q.Set(p.Value.Name, v[which]) // GET contact: by id (by email is the next probe)
		}
	}
	if strings.Contains(path, "{") {
		t.Fatalf("unfilled parameter in %s", path)
	}
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	return path
}

// exampleBody is the operation's first request example, or nil; an email in it is
// replaced by email (A's, or one nobody has), the other id that travels in bodies, and a new
// field's key by fieldKey (a key of B's own: one field of A's key made by B would be found
// by the probes of A's field that follow).
func exampleBody(op *openapi3.Operation, email, fieldKey string) any {
	body := firstExample(op)
	m, ok := body.(map[string]any)
	if !ok {
		return body
	}
	copied := make(map[string]any, len(m))
	for k, v := range m {
		copied[k] = v
	}
	if _, has := m["email"]; has {
		copied["email"] = email
	}
	if _, has := m["key"]; has && op.OperationID == "createField" {
		copied["key"] = fieldKey
	}
	if _, has := m["name"]; has && op.OperationID == "createSegment" { // a name of its own, as a field's key
		copied["name"] = fieldKey
	}
	return copied
}

func firstExample(op *openapi3.Operation) any {
	if op.RequestBody == nil {
		return nil
	}
	mt := op.RequestBody.Value.Content.Get("application/json")
	if mt == nil {
		return nil
	}
	if mt.Example != nil {
		return mt.Example
	}
	names := make([]string, 0, len(mt.Examples))
	for name := range mt.Examples {
		names = append(names, name)
	}
	sort.Strings(names)
	if len(names) > 0 {
		return mt.Examples[names[0]].Value.Value
	}
	return nil
}

// snapshot is everything of A's the matrix could have touched.
func snapshot(t *testing.T, a *testkit.API, key, contactID, subID string) string {
	t.Helper()
	c := a.Do("GET", "/public/v1/contact?contactId="+contactID, key, nil)
	byEmail := a.Do("GET", "/public/v1/contact?emailId=mine%40example.com", key, nil)
	subs := a.Do("GET", "/public/v1/webhooks", key, nil)
	att := a.Do("GET", "/public/v1/webhooks/"+subID+"/deliveries", key, nil)
	fields := a.Do("GET", "/public/v1/fields?archived=true", key, nil)
	segments := a.Do("GET", "/public/v1/segments", key, nil)
	var n int
	if err := a.Store.Pool.QueryRow(context.Background(), "SELECT count(*) FROM webhook_deliveries").Scan(&n); err != nil {
		t.Fatal(err)
	}
	var compact = func(b []byte) string {
		var v any
		_ = json.Unmarshal(b, &v)
		out, _ := json.Marshal(v)
		return regexp.MustCompile(`"leadScore":\d+`).ReplaceAllString(string(out), "")
	}
	return fmt.Sprintf("%d %s | %d %s | %s | %s | %s | %s | deliveries %d", c.Status, compact(c.Body), byEmail.Status,
		compact(byEmail.Body), compact(subs.Body), compact(att.Body), compact(fields.Body), compact(segments.Body), n)
}
