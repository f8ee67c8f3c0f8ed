package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/contact"
	"github.com/contactd/contactd/internal/testkit"
)

// deliveringAPI is an API whose delivery and enrichment workers run, with one account.
func deliveringAPI(t *testing.T) (*testkit.API, uuid.UUID, string) {
	t.Helper()
	a := testkit.NewAPI(t, testkit.LocalDelivery)
	a.StartWorkers()
	id, key := a.Account("acme")
	return a, id, key
}

// listen subscribes one loopback receiver to the event types.
func listen(t *testing.T, a *testkit.API, key string, types ...string) *testkit.Receiver {
	t.Helper()
	rc := testkit.NewReceiver(t)
	for _, typ := range types {
		if r := subscribe(t, a, key, rc.URL, typ); r.Status != http.StatusOK {
			t.Fatalf("subscribe %s: %d %s", typ, r.Status, r.Body)
		}
	}
	return rc
}

// nextEvent is the next event the receiver gets, its payload checked against the spec.
func nextEvent(t *testing.T, rc *testkit.Receiver) api.WebhookEvent {
	t.Helper()
	d := rc.Next(t)
	testkit.ValidatePayload(t, d.Body)
	var p api.WebhookPayload
	if err := json.Unmarshal(d.Body, &p); err != nil || len(p.Events) != 1 {
		t.Fatalf("payload %s: %v", d.Body, err)
	}
	return p.Events[0]
}

func getContact(t *testing.T, a *testkit.API, key, id string) api.Contact {
	t.Helper()
	r := a.Do("GET", "/public/v1/contact?contactId="+id, key, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("get %s: %d %s", id, r.Status, r.Body)
	}
	var c api.Contact
	r.JSON(t, &c)
	return c
}

func patch(t *testing.T, a *testkit.API, key, id string, body string) (api.Contact, *testkit.Response) {
	t.Helper()
	r := a.Do("PATCH", "/public/v1/contact/"+id, key, body)
	var c api.Contact
	if r.Status == http.StatusOK {
		r.JSON(t, &c)
	}
	return c, r
}

func TestPatchAbsentNullAndValue(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	id := createContact(t, a, key, map[string]any{
		"email": "jane@example.com", "name": "Jane", "phone": "555-010-2030", "assignedUserEmailId": "agent@example.com",
		"crmFields": map[string]any{"name": "Salesforce", "stage": "New", "source": "Website"},
	}).Contact.ContactId

	// a value changes only that field.
	c, r := patch(t, a, key, id, `{"name": "Jane Smith"}`)
	if r.Status != 200 || *c.Name != "Jane Smith" || *c.Phone != "555-010-2030" || *c.AssignedUserEmailId != "agent@example.com" || *c.CrmFields.Stage != "New" {
		t.Fatalf("PATCH name: %d %s", r.Status, r.Body)
	}
	// an empty patch changes nothing.
	if c2, r := patch(t, a, key, id, `{}`); r.Status != 200 || *c2.Name != "Jane Smith" || *c2.Phone != "555-010-2030" {
		t.Fatalf("PATCH {}: %d %s", r.Status, r.Body)
	}
	// null clears; absent stays.
	c, r = patch(t, a, key, id, `{"phone": null, "assignedUserEmailId": null}`)
	if r.Status != 200 || c.Phone != nil || c.AssignedUserEmailId != nil || *c.Name != "Jane Smith" {
		t.Fatalf("PATCH nulls: %d %s", r.Status, r.Body)
	}
	// crmFields merge: one member replaced, one cleared, the rest kept.
	c, r = patch(t, a, key, id, `{"crmFields": {"stage": "Won", "source": null}}`)
	if r.Status != 200 || *c.CrmFields.Stage != "Won" || c.CrmFields.Source != nil || *c.CrmFields.Name != "Salesforce" {
		t.Fatalf("PATCH crm merge: %d %s", r.Status, r.Body)
	}
	c, r = patch(t, a, key, id, `{"crmFields": null, "recordStatus": "NonMarketing", "email": "JANE.SMITH@example.com"}`)
	if r.Status != 200 || c.CrmFields != nil || c.RecordStatus != api.NonMarketing || c.Email != "JANE.SMITH@example.com" || c.EmailStatus != api.EmailStatusPending {
		t.Fatalf("PATCH crm null: %d %s", r.Status, r.Body)
	}
	if got := getContact(t, a, key, id); got.Name == nil || *got.Name != "Jane Smith" || got.Phone != nil || got.CrmFields != nil {
		t.Errorf("stored contact = %+v", got)
	}
	// the new email is the dedupe key now, the old one is free.
	if r := a.Do("GET", "/public/v1/contact?emailId=jane.smith%40example.com", key, nil); r.Status != 200 {
		t.Errorf("lookup by new email: %d", r.Status)
	}
	createContact(t, a, key, map[string]any{"email": "jane@example.com"})
}

func TestPatchRefusals(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	id := createContact(t, a, key, map[string]any{"email": "one@example.com", "name": "One"}).Contact.ContactId
	other := createContact(t, a, key, map[string]any{"email": "two@example.com"}).Contact.ContactId
	cases := []struct {
		body, field string
	}{
		{`{"name": "` + strings.Repeat("n", 65) + `"}`, "body.name"},
		{`{"phone": "12"}`, "body.phone"},
		{`{"email": null}`, "body.email"},
		{`{"email": "not-an-email"}`, "body.email"},
		{`{"recordStatus": null}`, "body.recordStatus"},
		{`{"recordStatus": "Maybe"}`, "body.recordStatus"},
		{`{"leadScore": 100}`, "body.leadScore"},
		{`{"crmFields": {"stage": "` + strings.Repeat("s", 65) + `"}}`, "body.crmFields.stage"},
		{`{"crmFields": {"color": "red"}}`, "body.crmFields.color"},
	}
	for _, tc := range cases {
		_, r := patch(t, a, key, id, tc.body)
		e := r.Error(t)
		if r.Status != 400 || e.Code != api.ErrorCodeInvalidRequest || e.Data == nil || e.Data.Errors == nil || (*e.Data.Errors)[0].Field != tc.field {
			t.Errorf("PATCH %s: %d %s, want 400 on %s", tc.body, r.Status, r.Body, tc.field)
		}
	}
	_, r := patch(t, a, key, id, `{"email": "TWO@example.com", "name": "Changed"}`)
	if e := r.Error(t); r.Status != 400 || e.Code != api.ErrorCodeDuplicateContact || e.Data == nil || *e.Data.ContactId != other {
		t.Errorf("PATCH to a taken email: %d %s", r.Status, r.Body)
	}
	if c := getContact(t, a, key, id); *c.Name != "One" || c.Email != "one@example.com" {
		t.Errorf("a refused PATCH changed the contact: %+v", c)
	}
	if _, r := patch(t, a, key, "01939d3c-0000-7000-8000-000000000000", `{"name": "x"}`); r.Status != 404 || r.Error(t).Code != api.ErrorCodeContactDoesNotExist {
		t.Errorf("PATCH unknown: %d %s", r.Status, r.Body)
	}
}

func TestPatchEvents(t *testing.T) {
	t.Parallel()
	a, _, key := deliveringAPI(t)
	details := listen(t, a, key, "ContactDetailsUpdated")
	unsub := listen(t, a, key, "ContactUnsubscribed")
	id := createContact(t, a, key, map[string]any{"email": "ev@example.com", "name": "Ev", "phone": "555-010-0000",
		"crmFields": map[string]any{"name": "Salesforce"}}).Contact.ContactId
	detailsChange := func(want string) {
		t.Helper()
		ev := nextEvent(t, details)
		got, _ := json.Marshal(ev.Data.ContactDetailsUpdatedInfo)
		if ev.EventType != api.EventTypeContactDetailsUpdated || !jsonEqual(got, []byte(want)) {
			t.Fatalf("ContactDetailsUpdated = %s, want %s", got, want)
		}
		if ci := ev.Data.ContactInfo; ci.ContactId != id {
			t.Errorf("contactInfo = %+v", ci)
		}
	}

	patch(t, a, key, id, `{"crmFields": {"stage": "Won"}, "assignedUserEmailId": "agent@example.com"}`)
	detailsChange(`{"changedFields": ["assignedUserEmailId", "crmFields"],
		"previous": {"name": "Ev", "email": "ev@example.com", "phone": "555-010-0000", "assignedUserEmailId": "",
			"crmFields": {"name": "Salesforce"}},
		"current": {"name": "Ev", "email": "ev@example.com", "phone": "555-010-0000", "assignedUserEmailId": "agent@example.com",
			"crmFields": {"name": "Salesforce", "stage": "Won"}}}`)
	patch(t, a, key, id, `{"name": "Eve", "phone": null}`)
	detailsChange(`{"changedFields": ["name", "phone"],
		"previous": {"name": "Ev", "email": "ev@example.com", "phone": "555-010-0000"},
		"current": {"name": "Eve", "email": "ev@example.com", "phone": ""}}`)

	// enrichment decides the new contact's email status in the background, and that moves
	// updatedAt: it is done first (once failed in CI, enrichment writing between the two reads)
	testkit.Eventually(t, "the contact enriched", func() bool {
		return a.Count(t, `SELECT count(*) FROM contacts WHERE contact_id = $1::uuid AND enrich_due_at IS NULL`, id) == 1
	})
	before := getContact(t, a, key, id)
	same, r := patch(t, a, key, id, `{"name": "Eve", "crmFields": {"stage": "Won"}, "assignedUserEmailId": "agent@example.com"}`)
	if r.Status != 200 || same.UpdatedAt != before.UpdatedAt {
		t.Errorf("a PATCH that changes nothing: %d, updatedAt %s, was %s", r.Status, same.UpdatedAt, before.UpdatedAt)
	}
	a.DeliveriesSettled(t)
	details.None(t) // the PATCH that changed nothing emitted nothing

	patch(t, a, key, id, `{"recordStatus": "NonMarketing"}`)
	ev := nextEvent(t, unsub)
	if u := ev.Data.ContactUnsubscribedInfo; u == nil || u.Source != "Update" {
		t.Fatalf("ContactUnsubscribed = %+v", ev)
	}
	detailsChange(`{"changedFields": ["recordStatus"],
		"previous": {"name": "Eve", "email": "ev@example.com", "phone": "", "recordStatus": "Marketing"},
		"current": {"name": "Eve", "email": "ev@example.com", "phone": "", "recordStatus": "NonMarketing"}}`)
	patch(t, a, key, id, `{"recordStatus": "NonMarketing"}`) // already unsubscribed: no second event of either
	a.DeliveriesSettled(t)
	unsub.None(t)
	details.None(t)
}

func TestDeleteContact(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	c := createContact(t, a, key, map[string]any{"email": "gone@example.com", "tags": []string{"t"},
		"address": "1 Main St, Springfield, IL 62704"}).Contact
	if r := a.Do("POST", "/public/v1/contact/"+c.ContactId+"/activity", key, map[string]any{"type": "EmailOpen"}); r.Status != 200 {
		t.Fatalf("activity: %d %s", r.Status, r.Body)
	}
	r := a.Do("DELETE", "/public/v1/contact/"+c.ContactId, key, nil)
	if r.Status != http.StatusNoContent || len(r.Body) != 0 {
		t.Fatalf("DELETE: %d %s", r.Status, r.Body)
	}
	if r := a.Do("GET", "/public/v1/contact?contactId="+c.ContactId, key, nil); r.Status != 404 {
		t.Errorf("GET after DELETE: %d", r.Status)
	}
	if r := a.Do("DELETE", "/public/v1/contact/"+c.ContactId, key, nil); r.Status != 404 || r.Error(t).Code != api.ErrorCodeContactDoesNotExist {
		t.Errorf("second DELETE: %d %s", r.Status, r.Body)
	}
	for _, table := range []string{"contacts", "properties", "activities"} {
		var n int
		if err := a.Store.Pool.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%s still has %d rows", table, n)
		}
	}
	if again := createContact(t, a, key, map[string]any{"email": "GONE@example.com"}).Contact; again.ContactId == c.ContactId {
		t.Errorf("the new contact reused the deleted id")
	}
}

func TestRemoveTags(t *testing.T) {
	t.Parallel()
	a, _, key := deliveringAPI(t)
	removed := listen(t, a, key, "TagsRemoved")
	id := createContact(t, a, key, map[string]any{"email": "t@example.com", "tags": []string{"a", "B", "c", "d"}}).Contact.ContactId
	r := a.Do("DELETE", "/public/v1/contact/"+id+"/tags", key, map[string]any{"tags": []string{" b ", "D", "zzz"}})
	var out api.TagsResponse
	r.JSON(t, &out)
	if r.Status != 200 || strings.Join(out.Tags, ",") != "a,c" {
		t.Fatalf("DELETE tags: %d %s", r.Status, r.Body)
	}
	ev := nextEvent(t, removed)
	if info := ev.Data.TagsRemovedInfo; info == nil || strings.Join(info.TagsRemoved, ",") != "B,d" {
		t.Fatalf("TagsRemoved = %+v, want the tags as the contact had them", ev.Data)
	}
	r = a.Do("DELETE", "/public/v1/contact/"+id+"/tags", key, map[string]any{"tags": []string{"nope"}})
	if r.JSON(t, &out); r.Status != 200 || strings.Join(out.Tags, ",") != "a,c" {
		t.Fatalf("DELETE absent tag: %d %s", r.Status, r.Body)
	}
	a.DeliveriesSettled(t)
	removed.None(t)
	for body, field := range map[string]string{`{"tags": [" "]}`: "body.tags.0", `{}`: "body.tags", `{"tags": "a"}`: "body.tags"} {
		r := a.Do("DELETE", "/public/v1/contact/"+id+"/tags", key, body)
		if e := r.Error(t); r.Status != 400 || (*e.Data.Errors)[0].Field != field {
			t.Errorf("DELETE tags %s: %d %s", body, r.Status, r.Body)
		}
	}
	if r := a.Do("DELETE", "/public/v1/contact/01939d3c-0000-7000-8000-000000000000/tags", key, map[string]any{"tags": []string{"a"}}); r.Status != 404 {
		t.Errorf("unknown contact: %d", r.Status)
	}
}

func TestProperties(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	id := createContact(t, a, key, map[string]any{"email": "p@example.com", "address": "123 N Main St, Springfield, IL 62704"}).Contact.ContactId
	add := func(addr string) *testkit.Response {
		return a.Do("POST", "/public/v1/contact/"+id+"/property", key, map[string]any{"address": addr})
	}
	r := add("500 East Capitol Avenue, Springfield, Illinois 62701")
	var c api.Contact
	r.JSON(t, &c)
	if r.Status != 200 || len(c.Properties) != 2 {
		t.Fatalf("add: %d %s", r.Status, r.Body)
	}
	added := c.Properties[1]
	want := api.Address{StreetAddress: "500 E Capitol Ave", City: "Springfield", County: "Sangamon County", State: "IL", Zip: "62701"}
	if added.Address != want {
		t.Errorf("address = %+v, want %+v", added.Address, want)
	}
	if r := add("500 E. Capitol Ave, springfield, IL 62701"); r.Status != 400 || r.Error(t).Code != api.ErrorCodeDuplicateProperty {
		t.Errorf("duplicate: %d %s", r.Status, r.Body)
	}
	if r := add("somewhere over the rainbow"); r.Status != 400 || r.Error(t).Code != api.ErrorCodeInvalidAddress {
		t.Errorf("unparseable: %d %s", r.Status, r.Body)
	}
	if r := add(strings.Repeat("1", 129)); r.Status != 400 || r.Error(t).Code != api.ErrorCodeInvalidRequest {
		t.Errorf("129 characters: %d %s", r.Status, r.Body)
	}
	archive := func(pid string) *testkit.Response {
		return a.Do("POST", "/public/v1/contact/property/"+pid+"/archive", key, nil)
	}
	for range 2 { // archiving again succeeds again
		r = archive(added.PropertyId)
		r.JSON(t, &c)
		if r.Status != 200 || len(c.Properties) != 1 || c.Properties[0].PropertyId == added.PropertyId {
			t.Fatalf("archive: %d %s", r.Status, r.Body)
		}
	}
	if got := getContact(t, a, key, id); len(got.Properties) != 1 {
		t.Errorf("GET shows %d properties after archive", len(got.Properties))
	}
	if r := add("500 E Capitol Ave, Springfield, IL 62701"); r.Status != 200 {
		t.Errorf("re-adding an archived address: %d %s", r.Status, r.Body)
	}
	for _, pid := range []string{"01939d3c-0000-7000-8000-000000000000", "not-a-uuid"} {
		if r := archive(pid); r.Status != 404 || r.Error(t).Code != api.ErrorCodePropertyDoesNotExist {
			t.Errorf("archive %s: %d %s", pid, r.Status, r.Body)
		}
	}
	if r := a.Do("POST", "/public/v1/contact/01939d3c-0000-7000-8000-000000000000/property", key, map[string]any{"address": "1 Main St, Springfield, IL 62704"}); r.Status != 404 || r.Error(t).Code != api.ErrorCodeContactDoesNotExist {
		t.Errorf("add to unknown contact: %d %s", r.Status, r.Body)
	}
}

// A contact holds at most 50 active properties, and 500 with the archived ones: the next add
// is refused with the rule named, and nothing is written.
func TestPropertiesAreBounded(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	address := func(n int) string { return fmt.Sprintf("%d N Main St, Springfield, IL 62704", 100+n) }
	id := createContact(t, a, key, map[string]any{"email": "many@example.com", "address": address(0)}).Contact.ContactId
	add := func(n int) *testkit.Response {
		return a.Do("POST", "/public/v1/contact/"+id+"/property", key, map[string]any{"address": address(n)})
	}
	for n := 1; n < contact.MaxActiveProperties; n++ {
		if r := add(n); r.Status != 200 {
			t.Fatalf("property %d: %d %s", n+1, r.Status, r.Body)
		}
	}
	refused := func(what string) {
		t.Helper()
		r := add(1000)
		e := r.Error(t)
		if r.Status != 400 || e.Code != api.ErrorCodeInvalidRequest || e.Data == nil || e.Data.Errors == nil ||
			len(*e.Data.Errors) != 1 || (*e.Data.Errors)[0].Reason != "maxProperties" || (*e.Data.Errors)[0].Field != "body.address" {
			t.Errorf("%s: %d %s", what, r.Status, r.Body)
		}
	}
	refused("a 51st active property")
	c := getContact(t, a, key, id)
	if len(c.Properties) != contact.MaxActiveProperties {
		t.Fatalf("%d active properties, want %d", len(c.Properties), contact.MaxActiveProperties)
	}
	if r := a.Do("POST", "/public/v1/contact/property/"+c.Properties[0].PropertyId+"/archive", key, nil); r.Status != 200 {
		t.Fatalf("archive: %d %s", r.Status, r.Body)
	}
	if r := add(1000); r.Status != 200 {
		t.Errorf("with one archived, an add: %d %s", r.Status, r.Body)
	}
	// the archived ones are history, bounded too: fill it to 500 in all
	if _, err := a.Store.Pool.Exec(context.Background(), `
		INSERT INTO properties (account_id, property_id, contact_id, raw_address, apt_or_unit_number, street_address,
		                        city, county, state, zip, normalized, created_at, archived_at)
		SELECT account_id, gen_random_uuid(), contact_id, raw_address, apt_or_unit_number, street_address,
		       city, county, state, zip, normalized || ' #' || g, created_at, now()
		FROM properties, generate_series(1, $2::int - (SELECT count(*) FROM properties WHERE contact_id = $1)::int) g
		WHERE contact_id = $1 AND property_id = (SELECT property_id FROM properties WHERE contact_id = $1 ORDER BY property_id LIMIT 1)`,
		id, contact.MaxProperties); err != nil {
		t.Fatal(err)
	}
	if r := a.Do("POST", "/public/v1/contact/property/"+getContact(t, a, key, id).Properties[0].PropertyId+"/archive", key, nil); r.Status != 200 {
		t.Fatalf("archive: %d %s", r.Status, r.Body)
	}
	refused("a 501st property, 49 of them active")
	var total int
	if err := a.Store.Pool.QueryRow(context.Background(), `SELECT count(*) FROM properties WHERE contact_id = $1`, id).Scan(&total); err != nil || total != contact.MaxProperties {
		t.Errorf("%d properties stored (%v), want %d", total, err, contact.MaxProperties)
	}
}

// TestPropertyChangesRacing: archives and adds racing on one contact leave its reads showing
// exactly the properties that stayed active (the contact keeps a copy of them; NewAPI's
// invariant check compares it with the properties table when the test ends). The race is
// proven: the test holds the contact's row until all nine changes wait for it.
func TestPropertyChangesRacing(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	account, key := a.Account("acme")
	address := func(n int) string { return fmt.Sprintf("%d N Main St, Springfield, IL 62704", 100+n) }
	id := createContact(t, a, key, map[string]any{"email": "race@example.com", "address": address(0)}).Contact.ContactId
	var old []string
	for n := 1; n <= 5; n++ {
		if r := a.Do("POST", "/public/v1/contact/"+id+"/property", key, map[string]any{"address": address(n)}); r.Status != 200 {
			t.Fatalf("add: %d %s", r.Status, r.Body)
		}
	}
	for _, p := range getContact(t, a, key, id).Properties {
		old = append(old, p.PropertyId)
	}
	held := holdContacts(t, a, account, id)
	var wg sync.WaitGroup
	for _, pid := range old {
		wg.Go(func() {
			if r := a.Do("POST", "/public/v1/contact/property/"+pid+"/archive", key, nil); r.Status != 200 {
				t.Errorf("archive: %d %s", r.Status, r.Body)
			}
		})
	}
	for n := 6; n <= 8; n++ {
		wg.Go(func() {
			if r := a.Do("POST", "/public/v1/contact/"+id+"/property", key, map[string]any{"address": address(n)}); r.Status != 200 {
				t.Errorf("add: %d %s", r.Status, r.Body)
			}
		})
	}
	changes := len(old) + 3
	testkit.Eventually(t, fmt.Sprintf("%d property changes waiting for the held contact", changes), func() bool { return a.LockWaiters(t) == changes })
	if err := held.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	var streets []string
	for _, p := range getContact(t, a, key, id).Properties {
		streets = append(streets, p.Address.StreetAddress)
	}
	slices.Sort(streets)
	if want := []string{"106 N Main St", "107 N Main St", "108 N Main St"}; !slices.Equal(streets, want) {
		t.Errorf("properties after the race: %v, want %v", streets, want)
	}
}

// jsonEqual reports whether a and b are the same JSON value, whatever their layout.
func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}
