package consumer_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/client"
	"github.com/contactd/contactd/internal/testkit"
)

// TestGoClient runs the smoke scenario through the Go client oapi-codegen generates from
// openapi.yaml (gen/client), over real HTTP, every response also validated against the spec.
func TestGoClient(t *testing.T) {
	a := testkit.NewAPI(t, testkit.LocalDelivery)
	_, key := a.Account("go-client")
	c := goClient(t, a, key)
	ctx := context.Background()
	email := "go.client@example.com"

	// an idempotent create, retried as after a lost response: one contact, the same answer
	idem := &client.CreateContactParams{IdempotencyKey: ptr(uuid.NewString())}
	newContact := client.CreateContactRequest{
		Email: client.Email(email), Name: ptr("Go Client"), Tags: &[]client.Tag{"lead"},
		Address: ptr("123 N Main St Apt 4, Springfield, IL 62704"),
	}
	created, err := c.CreateContactWithResponse(ctx, idem, newContact)
	if err != nil || created.JSON200 == nil {
		t.Fatalf("create: %v %s", err, body(created))
	}
	retried, err := c.CreateContactWithResponse(ctx, idem, newContact)
	if err != nil || retried.JSON200 == nil || retried.HTTPResponse.Header.Get("Idempotent-Replayed") != "true" ||
		retried.JSON200.Contact.ContactId != created.JSON200.Contact.ContactId {
		t.Fatalf("retried create: %v %s", err, body(retried))
	}
	contact := created.JSON200.Contact
	if len(contact.Properties) != 1 || contact.Properties[0].Address.County != "Sangamon County" {
		t.Errorf("create: properties %+v", contact.Properties)
	}

	got, err := c.GetContactWithResponse(ctx, &client.GetContactParams{EmailId: ptr(strings.ToUpper(email))})
	if err != nil || got.JSON200 == nil || got.JSON200.ContactId != contact.ContactId {
		t.Fatalf("get by email: %v %s", err, body(got))
	}

	tagged, err := c.AddContactTagsWithResponse(ctx, contact.ContactId, nil, client.TagsRequest{Tags: []client.Tag{"vip", "LEAD"}})
	if err != nil || tagged.JSON200 == nil || !slices.Equal(tagged.JSON200.Tags, []string{"lead", "vip"}) {
		t.Fatalf("add tags: %v %s", err, body(tagged))
	}

	rc := testkit.NewReceiver(t)
	sub, err := c.CreateWebhookWithResponse(ctx, nil, client.CreateWebhookRequest{Url: rc.URL, EventType: client.EventTypeTagsAdded})
	if err != nil || sub.JSON200 == nil || sub.JSON200.Secret == nil || !strings.HasPrefix(*sub.JSON200.Secret, "whsec_") {
		t.Fatalf("subscribe: %v %s", err, body(sub))
	}
	list, err := c.ListWebhooksWithResponse(ctx)
	if err != nil || list.JSON200 == nil || len(list.JSON200.Webhooks) != 1 {
		t.Fatalf("list: %v %s", err, body(list))
	}
	if w := list.JSON200.Webhooks[0]; w.SubscriptionId != sub.JSON200.SubscriptionId || w.Status != client.Active || w.Secret != nil {
		t.Errorf("listed %+v", w)
	}

	// A batch upsert: the existing contact updated, a new one created, a bad item failing alone.
	items := []client.BatchContactItem{}
	for _, item := range []client.CreateContactRequest{
		{Email: client.Email(email), Phone: ptr("555-010-0199")},
		{Email: "batch.new@example.com", Tags: &[]client.Tag{"import"}},
		{Email: "batch.bad@example.com", Name: ptr(strings.Repeat("n", 65))},
	} {
		raw, _ := json.Marshal(item)
		items = append(items, raw)
	}
	upsert := client.Upsert
	batch, err := c.BatchContactsWithResponse(ctx, &client.BatchContactsParams{IdempotencyKey: ptr(uuid.NewString())},
		client.BatchContactsRequest{Mode: &upsert, Contacts: items})
	if err != nil || batch.JSON200 == nil || len(batch.JSON200.Results) != 3 {
		t.Fatalf("batch: %v %s", err, body(batch))
	}
	if r := batch.JSON200.Results; r[0].Status != client.BatchContactItemResultStatusUpdated || r[0].ContactId.String() != contact.ContactId ||
		r[1].Status != client.BatchContactItemResultStatusCreated || r[2].Status != client.BatchContactItemResultStatusFailed ||
		r[2].Error.Code != client.ErrorCodeInvalidRequest {
		t.Errorf("batch results: %+v", r)
	}

	// Data out: list and search, export, the events feed.
	found, err := c.ListContactsWithResponse(ctx, &client.ListContactsParams{Q: ptr("go cli"), Tag: &[]string{"VIP"}})
	if err != nil || found.JSON200 == nil || len(found.JSON200.Contacts) != 1 || found.JSON200.Contacts[0].ContactId != contact.ContactId ||
		*found.JSON200.Contacts[0].Phone != "555-010-0199" {
		t.Fatalf("list: %v %s", err, body(found))
	}
	exported, err := c.ExportContactsWithResponse(ctx, &client.ExportContactsParams{Tag: &[]string{"lead"}})
	if err != nil || exported.StatusCode() != 200 || strings.Count(string(exported.Body), "\n") != 1 ||
		!strings.Contains(string(exported.Body), contact.ContactId) {
		t.Fatalf("export: %v %s", err, body(exported))
	}
	var events []client.WebhookEvent
	testkit.Eventually(t, "three TagsAdded events in the feed", func() bool {
		page, err := c.ListEventsWithResponse(ctx, &client.ListEventsParams{EventType: ptr(client.EventTypeTagsAdded)})
		if err != nil || page.JSON200 == nil {
			t.Fatalf("events: %v %s", err, body(page))
		}
		events = page.JSON200.Events
		return len(events) >= 3
	})
	if len(events) != 3 || events[0].Data.ContactInfo.ContactId != contact.ContactId {
		t.Fatalf("events: %+v", events)
	}
	one, err := c.GetEventWithResponse(ctx, events[1].EventId)
	if err != nil || one.JSON200 == nil || one.JSON200.Data.TagsAddedInfo == nil || one.JSON200.Data.TagsAddedInfo.TagsAdded[0] != "vip" {
		t.Fatalf("event: %v %s", err, body(one))
	}

	// A 400 and a 404 decode into the spec's Error type. (The generated Email type refuses a
	// malformed address before sending, so the 400 comes from a name over its limit.)
	invalid, err := c.CreateContactWithResponse(ctx, nil, client.CreateContactRequest{Email: "x@example.com",
		Name: ptr(strings.Repeat("x", 65))})
	if err != nil || invalid.StatusCode() != http.StatusBadRequest || invalid.JSON400 == nil {
		t.Fatalf("invalid create: %v %s", err, body(invalid))
	}
	if e := invalid.JSON400; e.Code != client.ErrorCodeInvalidRequest || e.Data == nil || e.Data.Errors == nil ||
		(*e.Data.Errors)[0].Field != "body.name" {
		t.Errorf("400 body %+v", e)
	}
	missing, err := c.GetContactWithResponse(ctx, &client.GetContactParams{ContactId: ptr(uuid.Must(uuid.NewV7()).String())})
	if err != nil || missing.StatusCode() != http.StatusNotFound || missing.JSON404 == nil ||
		missing.JSON404.Code != client.ErrorCodeContactDoesNotExist {
		t.Fatalf("missing contact: %v %s", err, body(missing))
	}
}

func ptr[T any](v T) *T { return &v }

// body is a generated response's raw body, for failure messages.
func body(r any) string {
	v := reflect.ValueOf(r)
	if v.IsNil() {
		return "<no response>"
	}
	return string(v.Elem().FieldByName("Body").Bytes())
}

// TestGoClientCustomFields defines a unique field through the generated Go client, writes a
// value on a create and a PATCH, reads it back, finds the contact by it, and is told which
// contact holds it when another create takes it.
func TestGoClientCustomFields(t *testing.T) {
	a := testkit.NewAPI(t)
	_, key := a.Account("go-client-fields")
	c := goClient(t, a, key)
	ctx := context.Background()
	defined, err := c.CreateFieldWithResponse(ctx, nil, client.CreateFieldRequest{Key: "member", Label: "Member number",
		Type: client.FieldTypeNumber, Unique: ptr(true)})
	if err != nil || defined.JSON200 == nil || !defined.JSON200.Unique {
		t.Fatalf("define: %v %s", err, body(defined))
	}
	values := client.CustomFieldsWrite(`{"member": 1042}`)
	created, err := c.CreateContactWithResponse(ctx, nil, client.CreateContactRequest{Email: "fields@example.com", CustomFields: &values})
	if err != nil || created.JSON200 == nil || created.JSON200.Contact.CustomFields == nil ||
		string(*created.JSON200.Contact.CustomFields) != `{"member":1042}` {
		t.Fatalf("create: %v %s", err, body(created))
	}
	id := created.JSON200.Contact.ContactId
	changed := client.CustomFieldsWrite(`{"member": 1043}`)
	patched, err := c.UpdateContactWithResponse(ctx, id, nil, client.UpdateContactRequest{CustomFields: &changed})
	if err != nil || patched.JSON200 == nil || string(*patched.JSON200.CustomFields) != `{"member":1043}` {
		t.Fatalf("patch: %v %s", err, body(patched))
	}
	found, err := c.GetContactWithResponse(ctx, &client.GetContactParams{Field: ptr("member"), Value: ptr("1043")})
	if err != nil || found.JSON200 == nil || found.JSON200.ContactId != id {
		t.Fatalf("get by the field: %v %s", err, body(found))
	}
	taken, err := c.CreateContactWithResponse(ctx, nil, client.CreateContactRequest{Email: "other@example.com", CustomFields: &changed})
	if err != nil || taken.JSON409 == nil || taken.JSON409.Code != client.ErrorCodeFieldValueTaken ||
		taken.JSON409.Data == nil || *taken.JSON409.Data.ContactId != id {
		t.Fatalf("a taken value: %v %s", err, body(taken))
	}
}

// TestGoClientSegments saves a segment on a custom field through the generated Go client and
// reads it back by id and in the list, its operands as stored, and a contact that meets it as
// one of its members; a member added by hand to a dynamic segment and a second segment of the
// same name are told which error they are.
func TestGoClientSegments(t *testing.T) {
	a := testkit.NewAPI(t)
	_, key := a.Account("go-client-segments")
	c := goClient(t, a, key)
	ctx := context.Background()
	if r, err := c.CreateFieldWithResponse(ctx, nil, client.CreateFieldRequest{Key: "mobile", Label: "Mobile", Type: client.FieldTypePhone}); err != nil || r.JSON200 == nil {
		t.Fatalf("define: %v %s", err, body(r))
	}
	req := client.CreateSegmentRequest{Name: "Reachable VIPs", Filter: client.SegmentFilter{Groups: []client.SegmentGroup{{Conditions: []client.SegmentCondition{
		{Attribute: "customFields.mobile", Operator: client.Eq, Value: ptr(client.SegmentOperand(`"(555) 010-2030"`))},
		{Attribute: "tags", Operator: client.Contains, Value: ptr(client.SegmentOperand(`"VIP"`))}}}}}}
	saved, err := c.CreateSegmentWithResponse(ctx, nil, req)
	if err != nil || saved.JSON200 == nil || saved.JSON200.Kind != client.Dynamic {
		t.Fatalf("save: %v %s", err, body(saved))
	}
	read, err := c.GetSegmentWithResponse(ctx, saved.JSON200.SegmentId)
	if err != nil || read.JSON200 == nil {
		t.Fatalf("read: %v %s", err, body(read))
	}
	conds := read.JSON200.Filter.Groups[0].Conditions
	if string(*conds[0].Value) != `"+15550102030"` || string(*conds[1].Value) != `"vip"` {
		t.Errorf("operands read back: %s, %s", *conds[0].Value, *conds[1].Value)
	}
	list, err := c.ListSegmentsWithResponse(ctx)
	if err != nil || list.JSON200 == nil || len(list.JSON200.Segments) != 1 || list.JSON200.Segments[0].SegmentId != saved.JSON200.SegmentId {
		t.Fatalf("list: %v %s", err, body(list))
	}
	created, err := c.CreateContactWithResponse(ctx, nil, client.CreateContactRequest{Email: "vip@example.com",
		Tags: &[]string{"vip"}, CustomFields: ptr(client.CustomFieldsWrite(`{"mobile": "555-010-2030"}`))})
	if err != nil || created.JSON200 == nil {
		t.Fatalf("create a contact: %v %s", err, body(created))
	}
	in := client.Segments
	got, err := c.GetContactWithResponse(ctx, &client.GetContactParams{ContactId: &created.JSON200.Contact.ContactId, Include: &in})
	if err != nil || got.JSON200 == nil || got.JSON200.Segments == nil || len(*got.JSON200.Segments) != 1 || (*got.JSON200.Segments)[0] != saved.JSON200.SegmentId {
		t.Fatalf("the contact's segments: %v %s", err, body(got))
	}
	members, err := c.ListSegmentMembersWithResponse(ctx, saved.JSON200.SegmentId, &client.ListSegmentMembersParams{})
	if err != nil || members.JSON200 == nil || members.JSON200.Count != 1 || members.JSON200.Members[0].ContactId != created.JSON200.Contact.ContactId {
		t.Fatalf("the segment's members: %v %s", err, body(members))
	}
	byHand, err := c.AddSegmentMemberWithResponse(ctx, saved.JSON200.SegmentId, created.JSON200.Contact.ContactId)
	if err != nil || byHand.JSON400 == nil || byHand.JSON400.Code != client.ErrorCodeSegmentIsDynamic {
		t.Fatalf("a dynamic segment's member by hand: %v %s", err, body(byHand))
	}
	again, err := c.CreateSegmentWithResponse(ctx, nil, req)
	if err != nil || again.JSON409 == nil || again.JSON409.Code != client.ErrorCodeSegmentExists {
		t.Fatalf("the same name again: %v %s", err, body(again))
	}
}

// goClient is the generated client of a's API with key, every response validated against the
// spec.
func goClient(t *testing.T, a *testkit.API, key string) *client.ClientWithResponses {
	t.Helper()
	c, err := client.NewClientWithResponses(a.URL,
		client.WithHTTPClient(&http.Client{Transport: testkit.ValidatingTransport(t)}),
		client.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
			r.Header.Set("x-api-key", key)
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}
