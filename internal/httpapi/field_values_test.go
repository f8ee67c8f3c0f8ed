package httpapi_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/apicore"
	"github.com/contactd/contactd/internal/contact"
	"github.com/contactd/contactd/internal/field"
	"github.com/contactd/contactd/internal/importer"
	"github.com/contactd/contactd/internal/testkit"
)

// customFieldsOf is a contact's customFields as the API shows them.
func customFieldsOf(t *testing.T, c api.Contact) map[string]any {
	t.Helper()
	if c.CustomFields == nil {
		t.Fatalf("contact %s has no customFields", c.ContactId)
	}
	var m map[string]any
	if err := json.Unmarshal(*c.CustomFields, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// memberAndSeats is an account with a unique text field member and a number field seats.
func memberAndSeats(t *testing.T) (*testkit.API, uuid.UUID, string) {
	t.Helper()
	a := testkit.NewAPI(t)
	account, key := a.Account("acme")
	defineField(t, a, key, map[string]any{"key": "member", "label": "Member", "type": "text", "unique": true})
	defineField(t, a, key, map[string]any{"key": "seats", "label": "Seats", "type": "number"})
	return a, account, key
}

// defineEveryType defines a field of each type.
func defineEveryType(t *testing.T, a *testkit.API, key string) {
	t.Helper()
	for _, f := range []map[string]any{
		{"key": "nickname", "label": "Nickname", "type": "text", "validation": map[string]any{"maxLength": 12, "pattern": "^[a-z ]+$"}},
		{"key": "seats", "label": "Seats", "type": "number", "validation": map[string]any{"min": 1, "max": 500}},
		{"key": "vip", "label": "VIP", "type": "boolean"},
		{"key": "renewal", "label": "Renewal", "type": "date"},
		{"key": "last_call", "label": "Last call", "type": "datetime"},
		{"key": "tier", "label": "Tier", "type": "enum", "options": []map[string]any{{"value": "gold", "label": "Gold"}, {"value": "silver", "label": "Silver"}}},
		{"key": "channels", "label": "Channels", "type": "multiEnum", "options": []map[string]any{
			{"value": "sms", "label": "SMS"}, {"value": "mail", "label": "Mail"}, {"value": "call", "label": "Call"}}},
		{"key": "work_email", "label": "Work email", "type": "email"},
		{"key": "mobile", "label": "Mobile", "type": "phone"},
		{"key": "site", "label": "Site", "type": "url"},
	} {
		defineField(t, a, key, f)
	}
}

// Values of every type are written normalised, read back by GET and the list, changed by
// PATCH (a key sent is set, null and "" clear, the others stay), and each change is a
// ContactDetailsUpdated naming customFields with the changed fields' values before and after.
func TestCustomFieldValues(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	defineEveryType(t, a, key)

	created := createContact(t, a, key, map[string]any{"email": "jane@example.com", "customFields": map[string]any{
		"nickname": "jj", "seats": 12.5, "vip": false, "renewal": "2027-03-01", "last_call": "2026-11-27T09:30:00.1234+02:00",
		"tier": "gold", "channels": []string{"call", "sms", "call"}, "work_email": " Jane.Doe@Example.COM ",
		"mobile": "(555) 010-2030", "site": "HTTPS://Example.COM/a?b=c",
	}}).Contact
	want := map[string]any{"nickname": "jj", "seats": 12.5, "vip": false, "renewal": "2027-03-01",
		"last_call": "2026-11-27T07:30:00.123Z", "tier": "gold", "channels": []any{"sms", "call"},
		"work_email": "jane.doe@example.com", "mobile": "+15550102030", "site": "https://example.com/a?b=c"}
	if got := customFieldsOf(t, created); !reflect.DeepEqual(got, want) {
		t.Errorf("created with %v, want %v", got, want)
	}
	var read api.Contact
	a.Do("GET", "/public/v1/contact?contactId="+created.ContactId, key, nil).JSON(t, &read)
	if got := customFieldsOf(t, read); !reflect.DeepEqual(got, want) {
		t.Errorf("read back %v, want %v", got, want)
	}
	var list api.ContactList
	a.Do("GET", "/public/v1/contacts", key, nil).JSON(t, &list)
	if len(list.Contacts) != 1 || !reflect.DeepEqual(customFieldsOf(t, list.Contacts[0]), want) {
		t.Errorf("listed: %+v", list.Contacts)
	}
	plain := createContact(t, a, key, map[string]any{"email": "plain@example.com"}).Contact
	if got := customFieldsOf(t, plain); len(got) != 0 {
		t.Errorf("a contact without values shows %v, want {}", got)
	}

	r := a.Do("PATCH", "/public/v1/contact/"+created.ContactId, key, map[string]any{"customFields": map[string]any{
		"tier": "silver", "nickname": nil, "site": "", "seats": 12.5}})
	var patched api.Contact
	if r.JSON(t, &patched); r.Status != 200 {
		t.Fatalf("patch: %d %s", r.Status, r.Body)
	}
	want["tier"] = "silver"
	delete(want, "nickname")
	delete(want, "site")
	if got := customFieldsOf(t, patched); !reflect.DeepEqual(got, want) {
		t.Errorf("patched to %v, want %v", got, want)
	}
	var info struct {
		ChangedFields []string `json:"changedFields"`
		Previous      struct {
			CustomFields map[string]any `json:"customFields"`
		} `json:"previous"`
		Current struct {
			CustomFields map[string]any `json:"customFields"`
		} `json:"current"`
	}
	var payload []byte
	if err := testkit.Pool(a.Store).QueryRow(context.Background(), `SELECT payload::text FROM webhook_events
		WHERE contact_id = $1 AND event_type = 'ContactDetailsUpdated'`, created.ContactId).Scan(&payload); err != nil {
		t.Fatal(err)
	}
	var ev struct {
		Data struct {
			Info json.RawMessage `json:"contactDetailsUpdatedInfo"`
		} `json:"data"`
	}
	if err := json.Unmarshal(payload, &ev); err != nil || json.Unmarshal(ev.Data.Info, &info) != nil {
		t.Fatalf("payload %s", payload)
	}
	if !reflect.DeepEqual(info.ChangedFields, []string{"customFields"}) ||
		!reflect.DeepEqual(info.Previous.CustomFields, map[string]any{"tier": "gold", "nickname": "jj", "site": "https://example.com/a?b=c"}) ||
		!reflect.DeepEqual(info.Current.CustomFields, map[string]any{"tier": "silver", "nickname": nil, "site": nil}) {
		t.Errorf("event: %s", ev.Data.Info)
	}
	// the same values again change nothing: no event, updatedAt as it was
	r = a.Do("PATCH", "/public/v1/contact/"+created.ContactId, key, map[string]any{"customFields": map[string]any{
		"tier": "silver", "channels": []string{"call", "sms"}, "nickname": nil}})
	var again api.Contact
	if r.JSON(t, &again); r.Status != 200 || again.UpdatedAt != patched.UpdatedAt {
		t.Errorf("a patch to the same values: %d, updatedAt %s then %s", r.Status, patched.UpdatedAt, again.UpdatedAt)
	}
	if n := a.Count(t, `SELECT count(*) FROM webhook_events WHERE contact_id = $1 AND event_type = 'ContactDetailsUpdated'`, created.ContactId); n != 1 {
		t.Errorf("%d ContactDetailsUpdated events, want 1", n)
	}
}

// Every value that breaks its field's rules is refused with 400 naming the field and the
// rule, all of them at once, and nothing is written.
func TestCustomFieldValuesRefused(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	defineEveryType(t, a, key)
	defineField(t, a, key, map[string]any{"key": "old", "label": "Old", "type": "text"})
	if r := a.Do("POST", "/public/v1/fields/old/archive", key, nil); r.Status != 200 {
		t.Fatalf("archive: %d %s", r.Status, r.Body)
	}
	if r := a.Do("PATCH", "/public/v1/fields/tier", key, map[string]any{"options": []map[string]any{{"value": "silver", "archived": true}}}); r.Status != 200 {
		t.Fatalf("archive option: %d %s", r.Status, r.Body)
	}
	cases := []struct {
		key    string
		value  any
		reason string
	}{
		{"nickname", "way too long for it", "maxLength"},
		{"nickname", "Capitals", "pattern"},
		{"nickname", 7, "type"},
		{"seats", 0, "minimum"},
		{"seats", 501, "maximum"},
		{"seats", "12", "type"},
		{"vip", "yes", "type"},
		{"renewal", "01/03/2027", "format"},
		{"renewal", "2027-02-30", "format"},
		{"last_call", "2026-11-27 09:30", "format"},
		{"tier", "bronze", "enum"},
		{"tier", "silver", "enum"}, // archived option
		{"channels", []string{"sms", "fax"}, "enum"},
		{"channels", "sms", "type"},
		{"work_email", "not-an-email", "format"},
		{"mobile", "12345", "format"},
		{"mobile", "call me", "format"},
		{"site", "ftp://example.com", "format"},
		{"site", "example.com", "format"},
		{"nope", "x", "unknown"},
		{"old", "x", "archived"},
	}
	values := map[string]any{}
	for _, c := range cases {
		r := a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "x@example.com", "customFields": map[string]any{c.key: c.value}})
		e := r.Error(t)
		if r.Status != 400 || e.Code != api.ErrorCodeInvalidRequest || e.Data == nil || e.Data.Errors == nil || len(*e.Data.Errors) != 1 ||
			(*e.Data.Errors)[0].Field != "body.customFields."+c.key || (*e.Data.Errors)[0].Reason != c.reason {
			t.Errorf("%s = %v: %d %s, want 400 %s", c.key, c.value, r.Status, r.Body, c.reason)
		}
		values[c.key] = c.value
	}
	r := a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "x@example.com", "customFields": values})
	if e := r.Error(t); r.Status != 400 || e.Data == nil || e.Data.Errors == nil || len(*e.Data.Errors) != len(values) {
		t.Errorf("all at once: %d %s, want one error per field (%d)", r.Status, r.Body, len(values))
	}
	if n := a.Count(t, "SELECT count(*) FROM contacts"); n != 0 {
		t.Errorf("%d contacts written by refused creates", n)
	}
}

// A required field needs a value on every create and cannot be cleared; contacts made before
// it was required keep working. An archived field's values stay readable.
func TestRequiredAndArchivedFields(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	defineField(t, a, key, map[string]any{"key": "region", "label": "Region", "type": "text"})
	before := createContact(t, a, key, map[string]any{"email": "before@example.com", "customFields": map[string]any{"region": "north"}}).Contact
	if r := a.Do("PATCH", "/public/v1/fields/region", key, map[string]any{"required": true}); r.Status != 200 {
		t.Fatalf("make required: %d %s", r.Status, r.Body)
	}
	for _, body := range []map[string]any{
		{"email": "a@example.com"},
		{"email": "a@example.com", "customFields": map[string]any{"region": ""}},
		{"email": "a@example.com", "customFields": map[string]any{"region": nil}},
	} {
		r := a.Do("POST", "/public/v1/contact", key, body)
		if e := r.Error(t); r.Status != 400 || !hasFieldError(e, "body.customFields.region") || (*e.Data.Errors)[0].Reason != "required" {
			t.Errorf("create %v: %d %s, want 400 required", body, r.Status, r.Body)
		}
	}
	createContact(t, a, key, map[string]any{"email": "a@example.com", "customFields": map[string]any{"region": "south"}})
	r := a.Do("PATCH", "/public/v1/contact/"+before.ContactId, key, map[string]any{"customFields": map[string]any{"region": nil}})
	if e := r.Error(t); r.Status != 400 || !hasFieldError(e, "body.customFields.region") {
		t.Errorf("clear a required field: %d %s", r.Status, r.Body)
	}
	if r := a.Do("PATCH", "/public/v1/contact/"+before.ContactId, key, map[string]any{"name": "Before"}); r.Status != 200 {
		t.Errorf("another change of a contact: %d %s", r.Status, r.Body)
	}
	if r := a.Do("POST", "/public/v1/fields/region/archive", key, nil); r.Status != 200 {
		t.Fatalf("archive: %d %s", r.Status, r.Body)
	}
	createContact(t, a, key, map[string]any{"email": "after@example.com"}) // archived: required no more
	var read api.Contact
	a.Do("GET", "/public/v1/contact?contactId="+before.ContactId, key, nil).JSON(t, &read)
	if got := customFieldsOf(t, read); got["region"] != "north" {
		t.Errorf("archived field's value reads %v, want north", got)
	}
}

// A unique field's value is held by one contact: another create or PATCH with it (under any
// spelling its provider reads as the same address) is 409 FieldValueTaken naming the holder;
// an empty value never collides; a value let go (changed, contact deleted) can be taken.
func TestUniqueFieldValues(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	_, otherKey := a.Account("other")
	for _, k := range []string{key, otherKey} {
		defineField(t, a, k, map[string]any{"key": "login", "label": "Login", "type": "email", "unique": true})
		defineField(t, a, k, map[string]any{"key": "member", "label": "Member number", "type": "number", "unique": true})
	}
	holder := createContact(t, a, key, map[string]any{"email": "a@example.com", "customFields": map[string]any{"login": "Jane.Doe+crm@gmail.com", "member": 7}}).Contact
	taken := func(r *testkit.Response, field string) {
		t.Helper()
		e := r.Error(t)
		if r.Status != 409 || e.Code != "FieldValueTaken" || e.Data == nil || e.Data.ContactId == nil ||
			*e.Data.ContactId != holder.ContactId || !hasFieldError(e, "body.customFields."+field) {
			t.Errorf("want 409 FieldValueTaken by %s at %s, got %d %s", holder.ContactId, field, r.Status, r.Body)
		}
	}
	taken(a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "b@example.com", "customFields": map[string]any{"login": "janedoe@googlemail.com"}}), "login")
	taken(a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "b@example.com", "customFields": map[string]any{"member": 7.0}}), "member")
	if n := a.Count(t, "SELECT count(*) FROM contacts WHERE email_key = 'b@example.com'"); n != 0 {
		t.Errorf("a refused create left %d contacts", n)
	}
	createContact(t, a, otherKey, map[string]any{"email": "a@example.com", "customFields": map[string]any{"login": "janedoe@gmail.com"}}) // another account

	b := createContact(t, a, key, map[string]any{"email": "b@example.com", "customFields": map[string]any{"login": ""}}).Contact
	createContact(t, a, key, map[string]any{"email": "c@example.com", "customFields": map[string]any{"login": ""}})
	taken(a.Do("PATCH", "/public/v1/contact/"+b.ContactId, key, map[string]any{"customFields": map[string]any{"login": "jane.doe@gmail.com"}}), "login")
	// the holder moves to another value: the old one is free
	if r := a.Do("PATCH", "/public/v1/contact/"+holder.ContactId, key, map[string]any{"customFields": map[string]any{"login": "jane@work.example"}}); r.Status != 200 {
		t.Fatalf("holder changes: %d %s", r.Status, r.Body)
	}
	if r := a.Do("PATCH", "/public/v1/contact/"+b.ContactId, key, map[string]any{"customFields": map[string]any{"login": "jane.doe@gmail.com"}}); r.Status != 200 {
		t.Errorf("take a released value: %d %s", r.Status, r.Body)
	}
	if r := a.Do("DELETE", "/public/v1/contact/"+holder.ContactId, key, nil); r.Status != 200 && r.Status != 204 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	createContact(t, a, key, map[string]any{"email": "d@example.com", "customFields": map[string]any{"member": 7, "login": "jane@work.example"}})

	// a long value (past what a B-tree entry holds) is unique as any other
	defineField(t, a, key, map[string]any{"key": "essay", "label": "Essay", "type": "text", "unique": true})
	var essay strings.Builder
	for i := range field.MaxTextLength { // 3 bytes each, in no order compression finds
		essay.WriteRune(rune(0x4E00 + i*7919%20000))
	}
	long := essay.String()
	essayist := createContact(t, a, key, map[string]any{"email": "e@example.com", "customFields": map[string]any{"essay": long}}).Contact
	r := a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "f@example.com", "customFields": map[string]any{"essay": long}})
	if e := r.Error(t); r.Status != 409 || e.Code != "FieldValueTaken" {
		t.Errorf("the long value again: %d %s", r.Status, r.Body)
	}
	a.Do("DELETE", "/public/v1/contact/"+essayist.ContactId, key, nil)
	if n := a.Count(t, "SELECT count(*) FROM contact_unique_values"); n != 4 {
		t.Errorf("%d unique values held, want 4 (b's login, d's login and member, the other account's login)", n)
	}
}

// Creates racing for one unique value end in exactly one 200 and 409s naming its contact. The
// race is proven, not hoped for: an open transaction of the test holds the value first, so
// every racer's claim waits for it, and the database shows all of them waiting at once before
// it lets go; they then meet each other with nothing in between.
func TestUniqueFieldValueRace(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	ctx := context.Background()
	account, key := a.Account("acme")
	defineField(t, a, key, map[string]any{"key": "member", "label": "Member", "type": "text", "unique": true})
	// the value's stored form, as a claim of the product's own makes it
	probe := createContact(t, a, key, map[string]any{"email": "probe@example.com", "customFields": map[string]any{"member": "M-1"}}).Contact
	var stored string
	if err := a.Store.Pool.QueryRow(ctx, "SELECT value FROM contact_unique_values WHERE field_key = 'member'").Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if r := a.Do("DELETE", "/public/v1/contact/"+probe.ContactId, key, nil); r.Status != 204 {
		t.Fatalf("delete the probe: %d %s", r.Status, r.Body)
	}
	blocker := createContact(t, a, key, map[string]any{"email": "blocker@example.com"}).Contact
	held := hold(t, a, `INSERT INTO contact_unique_values (account_id, field_key, value, contact_id) VALUES ($1, 'member', $2, $3)`,
		account, stored, blocker.ContactId)
	const n = 8
	statuses := make([]int, n)
	bodies := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r := a.Do("POST", "/public/v1/contact", key, map[string]any{"email": fmt.Sprintf("racer%d@example.com", i), "customFields": map[string]any{"member": "M-1"}})
			statuses[i], bodies[i] = r.Status, string(r.Body)
		})
	}
	testkit.Eventually(t, "every racer's claim waiting for the held value", func() bool { return a.LockWaiters(t) == n })
	if err := held.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	var winner string
	if err := testkit.Pool(a.Store).QueryRow(ctx, "SELECT contact_id::text FROM contact_unique_values").Scan(&winner); err != nil {
		t.Fatal(err)
	}
	ok := 0
	for i, s := range statuses {
		switch {
		case s == 200:
			ok++
		case s != 409 || !strings.Contains(bodies[i], `"contactId":"`+winner+`"`):
			t.Errorf("racer %d: %d %s, want 409 naming %s", i, s, bodies[i], winner)
		}
	}
	if contacts := a.Count(t, "SELECT count(*) FROM contacts"); ok != 1 || contacts != 2 {
		t.Errorf("%d creates succeeded, %d contacts: want 1, and 2 with the blocker", ok, contacts)
	}
}

// A process whose cached definitions are stale (another process made a field required, or
// archived it) does not write against them: its create is checked against the new ones. Nor
// does it refuse a search by a field it does not know yet.
func TestDefinitionsChangedByAnotherProcess(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	second := a.SecondProcess()
	defineField(t, a, key, map[string]any{"key": "region", "label": "Region", "type": "text"})
	createContact(t, second, key, map[string]any{"email": "first@example.com", "customFields": map[string]any{"region": "north"}}) // second caches the definitions
	if r := a.Do("PATCH", "/public/v1/fields/region", key, map[string]any{"required": true}); r.Status != 200 {
		t.Fatalf("make required: %d %s", r.Status, r.Body)
	}
	r := second.Do("POST", "/public/v1/contact", key, map[string]any{"email": "second@example.com"})
	if e := r.Error(t); r.Status != 400 || !hasFieldError(e, "body.customFields.region") {
		t.Errorf("create through the process with stale definitions: %d %s, want 400 required", r.Status, r.Body)
	}
	res := batch(t, second, key, "create", map[string]any{"email": "third@example.com"})
	if res[0].Status != "failed" || res[0].Error == nil || res[0].Error.Code != api.ErrorCodeInvalidRequest {
		t.Errorf("batch through the process with stale definitions: %+v", res[0])
	}
	if r := a.Do("POST", "/public/v1/fields/region/archive", key, nil); r.Status != 200 {
		t.Fatalf("archive: %d %s", r.Status, r.Body)
	}
	r = second.Do("POST", "/public/v1/contact", key, map[string]any{"email": "fourth@example.com", "customFields": map[string]any{"region": "south"}})
	if e := r.Error(t); r.Status != 400 || !hasFieldError(e, "body.customFields.region") || (*e.Data.Errors)[0].Reason != "archived" {
		t.Errorf("write an archived field through the stale process: %d %s", r.Status, r.Body)
	}
	// a search by a field defined since the process cached the definitions reads them again
	defineField(t, a, key, map[string]any{"key": "tier", "label": "Tier", "type": "text"})
	createContact(t, a, key, map[string]any{"email": "fifth@example.com", "customFields": map[string]any{"tier": "gold"}})
	var list api.ContactList
	r = second.Do("GET", "/public/v1/contacts?field=tier:eq:gold", key, nil)
	if r.JSON(t, &list); r.Status != 200 || len(list.Contacts) != 1 || list.Contacts[0].Email != "fifth@example.com" {
		t.Errorf("search by a field new to the stale process: %d %s", r.Status, r.Body)
	}
}

// A batch checks each item's values alone: an item whose unique value another contact holds
// fails alone with FieldValueTaken, the others are written; upsert sets an existing contact's
// values as PATCH does.
func TestBatchCustomFields(t *testing.T) {
	t.Parallel()
	a, _, key := memberAndSeats(t)
	holder := createContact(t, a, key, map[string]any{"email": "holder@example.com", "customFields": map[string]any{"member": "M-1", "seats": 1}}).Contact
	res := batch(t, a, key, "upsert",
		map[string]any{"email": "new@example.com", "customFields": map[string]any{"member": "M-2", "seats": 3}},
		map[string]any{"email": "thief@example.com", "customFields": map[string]any{"member": "M-1"}},
		map[string]any{"email": "bad@example.com", "customFields": map[string]any{"seats": "many"}},
		map[string]any{"email": "holder@example.com", "customFields": map[string]any{"seats": 2}},
		map[string]any{"email": "twin@example.com", "customFields": map[string]any{"member": "M-2"}},
	)
	if res[0].Status != "created" || res[3].Status != "updated" || res[3].ContactId.String() != holder.ContactId {
		t.Errorf("results: %+v", res)
	}
	for _, i := range []int{1, 4} {
		if e := res[i].Error; res[i].Status != "failed" || e == nil || e.Code != "FieldValueTaken" {
			t.Errorf("item %d: %+v, want FieldValueTaken", i, res[i])
		}
	}
	if e := res[2].Error; res[2].Status != "failed" || e == nil || e.Code != api.ErrorCodeInvalidRequest {
		t.Errorf("item 2: %+v, want InvalidRequest", res[2])
	}
	var read api.Contact
	a.Do("GET", "/public/v1/contact?contactId="+holder.ContactId, key, nil).JSON(t, &read)
	if got := customFieldsOf(t, read); !reflect.DeepEqual(got, map[string]any{"member": "M-1", "seats": 2.0}) {
		t.Errorf("upserted holder: %v", got)
	}
	if n := a.Count(t, "SELECT count(*) FROM contacts"); n != 2 {
		t.Errorf("%d contacts, want 2 (holder, new)", n)
	}
}

// A unique field is a match key: GET /contact?field=KEY&value=V finds the contact holding the
// value under any spelling of it, with contactId or emailId naming the same contact.
func TestGetContactByUniqueField(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	defineField(t, a, key, map[string]any{"key": "mobile", "label": "Mobile", "type": "phone", "unique": true})
	defineField(t, a, key, map[string]any{"key": "member", "label": "Member", "type": "number", "unique": true})
	defineField(t, a, key, map[string]any{"key": "note", "label": "Note", "type": "text"})
	c := createContact(t, a, key, map[string]any{"email": "jane@example.com", "customFields": map[string]any{"mobile": "+1 (555) 010-2030", "member": 42}}).Contact
	get := func(query string) *testkit.Response { return a.Do("GET", "/public/v1/contact?"+query, key, nil) }
	for _, q := range []string{"field=mobile&value=555.010.2030", "field=mobile&value=%2B15550102030", "field=member&value=42.0",
		"field=member&value=42&emailId=JANE@example.com", "field=member&value=42&contactId=" + c.ContactId} {
		var got api.Contact
		if r := get(q); r.Status != 200 {
			t.Errorf("%s: %d %s", q, r.Status, r.Body)
		} else if r.JSON(t, &got); got.ContactId != c.ContactId {
			t.Errorf("%s found %s", q, got.ContactId)
		}
	}
	for q, want := range map[string]string{
		"field=member&value=43":                           "404 ContactDoesNotExist",
		"field=member&value=42&emailId=other@example.com": "404 ContactDoesNotExist",
		"field=note&value=x":                              "400 query.field",
		"field=nope&value=x":                              "400 query.field",
		"field=member&value=forty-two":                    "400 query.value",
		"field=member":                                    "400 query",
		"value=42":                                        "400 query",
		"field=member&value=42&contactId=" + uuid.NewString(): "404 ContactDoesNotExist",
	} {
		r := get(q)
		e := r.Error(t)
		var where string
		if e.Data != nil && e.Data.Errors != nil {
			where = (*e.Data.Errors)[0].Field
		}
		if got := fmt.Sprintf("%d %s", r.Status, e.Code); r.Status == 404 && got != want || r.Status != 404 && fmt.Sprintf("%d %s", r.Status, where) != want {
			t.Errorf("%s: %d %s, want %s", q, r.Status, r.Body, want)
		}
	}
}

// The CSV export has a column per field of the account, archived ones too, in the order they
// were defined; the NDJSON export carries customFields as every read does.
func TestExportCustomFields(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	defineField(t, a, key, map[string]any{"key": "seats", "label": "Seats", "type": "number"})
	defineField(t, a, key, map[string]any{"key": "channels", "label": "Channels", "type": "multiEnum", "options": []map[string]any{
		{"value": "sms", "label": "SMS"}, {"value": "mail", "label": "Mail"}}})
	defineField(t, a, key, map[string]any{"key": "motto", "label": "Motto", "type": "text"})
	createContact(t, a, key, map[string]any{"email": "jane@example.com", "customFields": map[string]any{
		"seats": 1500000, "channels": []string{"mail", "sms"}, "motto": "=1+2"}})
	createContact(t, a, key, map[string]any{"email": "sam@example.com"})
	if r := a.Do("POST", "/public/v1/fields/motto/archive", key, nil); r.Status != 200 {
		t.Fatalf("archive: %d %s", r.Status, r.Body)
	}
	r := a.Do("GET", "/public/v1/contacts/export", key, nil, "Accept", "text/csv")
	rows, err := csv.NewReader(strings.NewReader(string(r.Body))).ReadAll()
	if r.Status != 200 || err != nil || len(rows) != 3 {
		t.Fatalf("export: %d %v %s", r.Status, err, r.Body)
	}
	header, n := rows[0], len(rows[0])
	if !reflect.DeepEqual(header[n-3:], []string{"customFields.seats", "customFields.channels", "customFields.motto"}) {
		t.Errorf("header ends %v", header[n-3:])
	}
	byEmail := map[string][]string{rows[1][1]: rows[1], rows[2][1]: rows[2]}
	if got := byEmail["jane@example.com"][n-3:]; !reflect.DeepEqual(got, []string{"1500000", "sms;mail", "'=1+2"}) {
		t.Errorf("jane's cells %q", got)
	}
	if got := byEmail["sam@example.com"][n-3:]; !reflect.DeepEqual(got, []string{"", "", ""}) {
		t.Errorf("sam's cells %q", got)
	}
	r = a.Do("GET", "/public/v1/contacts/export", key, nil)
	want := map[string]any{"channels": []any{"sms", "mail"}, "motto": "=1+2", "seats": 1500000.0}
	found := false
	for line := range strings.SplitSeq(strings.TrimSpace(string(r.Body)), "\n") {
		var c api.Contact
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatal(err)
		}
		if c.Email == "jane@example.com" {
			found = reflect.DeepEqual(customFieldsOf(t, c), want)
		}
	}
	if r.Status != 200 || !found {
		t.Errorf("NDJSON export: %d %s", r.Status, r.Body)
	}
}

// A merge gives the primary each value it lacks from the first duplicate that has one; a
// unique value it takes stays claimed, by the primary now, and the values it does not take go
// with their duplicates, free again.
func TestMergeCarriesCustomFields(t *testing.T) {
	t.Parallel()
	a, _, key := memberAndSeats(t)
	defineField(t, a, key, map[string]any{"key": "note", "label": "Note", "type": "text"})
	primary := createContact(t, a, key, map[string]any{"email": "p@example.com", "customFields": map[string]any{"seats": 1}}).Contact
	first := createContact(t, a, key, map[string]any{"email": "a@example.com", "customFields": map[string]any{"seats": 5, "member": "M-1"}}).Contact
	second := createContact(t, a, key, map[string]any{"email": "b@example.com", "customFields": map[string]any{"member": "M-2", "note": "from b"}}).Contact
	r := a.Do("POST", "/public/v1/contacts/merge", key, map[string]any{"primaryContactId": primary.ContactId,
		"duplicateContactIds": []string{first.ContactId, second.ContactId}})
	var out api.MergeContactsResult
	if r.JSON(t, &out); r.Status != 200 {
		t.Fatalf("merge: %d %s", r.Status, r.Body)
	}
	if got := customFieldsOf(t, out.Contact); !reflect.DeepEqual(got, map[string]any{"seats": 1.0, "member": "M-1", "note": "from b"}) {
		t.Errorf("merged values %v", got)
	}
	r = a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "c@example.com", "customFields": map[string]any{"member": "M-1"}})
	if e := r.Error(t); r.Status != 409 || e.Data == nil || e.Data.ContactId == nil || *e.Data.ContactId != primary.ContactId {
		t.Errorf("the primary's taken value: %d %s, want 409 naming the primary", r.Status, r.Body)
	}
	createContact(t, a, key, map[string]any{"email": "d@example.com", "customFields": map[string]any{"member": "M-2"}})
	var payload string
	if err := testkit.Pool(a.Store).QueryRow(context.Background(), `SELECT payload::text FROM webhook_events
		WHERE contact_id = $1 AND event_type = 'ContactsMerged'`, primary.ContactId).Scan(&payload); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(payload, `"customFields":{"member":"M-1","note":"from b"}`) || !strings.Contains(payload, `"customFields":{"member":null,"note":null}`) {
		t.Errorf("ContactsMerged: %s", payload)
	}
}

// A batch upsert matched on a unique field updates the contact holding each item's value
// (its email too), creates the items whose value nobody holds, matches the items without a
// value by email, and refuses a field that is not unique.
func TestBatchUpsertMatchesOnAUniqueField(t *testing.T) {
	t.Parallel()
	a, _, key := memberAndSeats(t)
	held := createContact(t, a, key, map[string]any{"email": "old@example.com", "customFields": map[string]any{"member": "M-1", "seats": 1}}).Contact
	byEmail := createContact(t, a, key, map[string]any{"email": "plain@example.com"}).Contact
	createContact(t, a, key, map[string]any{"email": "taken@example.com"})
	r := a.Do("POST", "/public/v1/contacts/batch", key, map[string]any{"mode": "upsert", "matchField": "member", "contacts": []any{
		map[string]any{"email": "new@example.com", "name": "Moved", "customFields": map[string]any{"member": "M-1", "seats": 2}},
		map[string]any{"email": "fresh@example.com", "customFields": map[string]any{"member": "M-2"}},
		map[string]any{"email": "plain@example.com", "name": "By email"},
		map[string]any{"email": "taken@example.com", "customFields": map[string]any{"member": "M-3"}},
		map[string]any{"email": "fresh2@example.com", "customFields": map[string]any{"member": "M-2", "seats": 9}},
	}})
	var out api.BatchContactsResult
	if r.JSON(t, &out); r.Status != 200 || len(out.Results) != 5 {
		t.Fatalf("batch: %d %s", r.Status, r.Body)
	}
	res := out.Results
	if res[0].Status != "updated" || res[0].ContactId.String() != held.ContactId || res[1].Status != "created" ||
		res[2].Status != "updated" || res[2].ContactId.String() != byEmail.ContactId ||
		res[3].Status != "failed" || res[3].Error == nil || res[3].Error.Code != "DuplicateContact" ||
		res[4].Status != "updated" || res[4].ContactId == nil || *res[4].ContactId != *res[1].ContactId {
		t.Errorf("results: %s", r.Body)
	}
	var c api.Contact
	a.Do("GET", "/public/v1/contact?contactId="+held.ContactId, key, nil).JSON(t, &c)
	if c.Email != "new@example.com" || c.Name == nil || *c.Name != "Moved" || !reflect.DeepEqual(customFieldsOf(t, c), map[string]any{"member": "M-1", "seats": 2.0}) {
		t.Errorf("the matched contact: %+v %v", c, customFieldsOf(t, c))
	}
	a.Do("GET", "/public/v1/contact?field=member&value=M-2", key, nil).JSON(t, &c)
	if c.Email != "fresh2@example.com" || !reflect.DeepEqual(customFieldsOf(t, c), map[string]any{"member": "M-2", "seats": 9.0}) {
		t.Errorf("created then matched in the same batch: %s %v", c.Email, customFieldsOf(t, c))
	}
	for _, body := range []map[string]any{
		{"mode": "upsert", "matchField": "seats", "contacts": []any{map[string]any{"email": "x@example.com"}}},
		{"mode": "create", "matchField": "member", "contacts": []any{map[string]any{"email": "x@example.com"}}},
	} {
		r := a.Do("POST", "/public/v1/contacts/batch", key, body)
		if e := r.Error(t); r.Status != 400 || !hasFieldError(e, "body.matchField") {
			t.Errorf("%v: %d %s", body, r.Status, r.Body)
		}
	}
}

// A batch carries at most contact.MaxBatchFieldValues custom field values, all items
// together: one more is refused whole, naming body.contacts, and writes nothing.
func TestBatchFieldValuesAreBounded(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	const items = 1000
	perItem := contact.MaxBatchFieldValues/items + 1
	values := map[string]any{}
	for k := range perItem {
		defineField(t, a, key, map[string]any{"key": fmt.Sprintf("f_%02d", k), "label": "F", "type": "number"})
		values[fmt.Sprintf("f_%02d", k)] = k
	}
	batchOf := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = map[string]any{"email": fmt.Sprintf("c%04d@example.com", i), "customFields": values}
		}
		return out
	}
	r := a.Do("POST", "/public/v1/contacts/batch", key, map[string]any{"contacts": batchOf(items)})
	if e := r.Error(t); r.Status != 400 || !hasFieldError(e, "body.contacts") {
		t.Errorf("%d values: %d %s", items*perItem, r.Status, r.Body)
	}
	if n := a.Count(t, "SELECT count(*) FROM contacts"); n != 0 {
		t.Errorf("the refused batch wrote %d contacts", n)
	}
	batch(t, a, key, "create", batchOf(contact.MaxBatchFieldValues/perItem)...)
}

// An import of the CSV export's customFields.KEY columns, matched on a unique field, updates
// the contact holding each row's value (whatever its email) and creates the others.
func TestImportMatchesOnAUniqueField(t *testing.T) {
	t.Parallel()
	a, account, key := memberAndSeats(t)
	held := createContact(t, a, key, map[string]any{"email": "old@example.com", "customFields": map[string]any{"member": "M-1", "seats": 1}}).Contact
	file := filepath.Join(t.TempDir(), "people.csv")
	csvText := "Email,customFields.member,customFields.seats\nnew@example.com,M-1,7\nfresh@example.com,M-2,3\n"
	if err := os.WriteFile(file, []byte(csvText), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := apicore.NewBatch(a.Svc.Contacts)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := importer.Run(context.Background(), a.Store, b, importer.Options{Account: account, File: file,
		FieldTypes: map[string]string{"member": "text", "seats": "number"}, MatchField: "member"})
	if err != nil || sum.Updated != 1 || sum.Created != 1 || sum.Rejected != 0 {
		t.Fatalf("import: %v, %v", sum, err)
	}
	var c api.Contact
	a.Do("GET", "/public/v1/contact?contactId="+held.ContactId, key, nil).JSON(t, &c)
	if c.Email != "new@example.com" || !reflect.DeepEqual(customFieldsOf(t, c), map[string]any{"member": "M-1", "seats": 7.0}) {
		t.Errorf("the matched contact: %s %v", c.Email, customFieldsOf(t, c))
	}
	a.Do("GET", "/public/v1/contact?field=member&value=M-2", key, nil).JSON(t, &c)
	if c.Email != "fresh@example.com" || customFieldsOf(t, c)["seats"] != 3.0 {
		t.Errorf("the created contact: %s %v", c.Email, customFieldsOf(t, c))
	}
}

// A payload filter matches custom field values where events carry them: a subscription to
// ContactDetailsUpdated filtered on the new value of a field gets the changes to it and no
// other.
func TestPayloadFiltersMatchFieldValues(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t, testkit.LocalDelivery)
	a.StartWorkers()
	_, key := a.Account("acme")
	defineField(t, a, key, map[string]any{"key": "tier", "label": "Tier", "type": "text"})
	defineField(t, a, key, map[string]any{"key": "seats", "label": "Seats", "type": "number"})
	rc := testkit.NewReceiver(t)
	subscribeFiltered(t, a, key, rc.URL, "ContactDetailsUpdated", map[string]any{
		"data.contactDetailsUpdatedInfo.current.customFields.tier":  "gold",
		"data.contactDetailsUpdatedInfo.current.customFields.seats": map[string]any{"$gte": 10}})
	ids := map[string]string{}
	for _, email := range []string{"gold@example.com", "silver@example.com", "small@example.com"} {
		ids[email] = createContact(t, a, key, map[string]any{"email": email}).Contact.ContactId
	}
	for email, values := range map[string]map[string]any{
		"gold@example.com":   {"tier": "gold", "seats": 10},   // wanted: at the boundary
		"silver@example.com": {"tier": "silver", "seats": 50}, // left out
		"small@example.com":  {"tier": "gold", "seats": 9},    // left out
	} {
		if r := a.Do("PATCH", "/public/v1/contact/"+ids[email], key, map[string]any{"customFields": values}); r.Status != 200 {
			t.Fatalf("PATCH: %d %s", r.Status, r.Body)
		}
	}
	a.DeliveriesSettled(t)
	var got []string
	for len(rc.Got) > 0 {
		var p api.WebhookPayload
		if err := json.Unmarshal(rc.Next(t).Body, &p); err != nil {
			t.Fatal(err)
		}
		for _, ev := range p.Events {
			got = append(got, ev.Data.ContactInfo.EmailId)
		}
	}
	if !reflect.DeepEqual(got, []string{"gold@example.com"}) {
		t.Errorf("delivered %v, want only gold@example.com's change", got)
	}
}

// The list and the export filter by custom field values: equality (a value read as a write
// reads it), in, ranges at their boundaries, a multiEnum's option, exists, all conditions
// together; a page filtered so walks a bounded stretch of the account and may end early with
// a cursor that walks on; a bad condition is 400 naming query.field.
func TestSearchByCustomFields(t *testing.T) {
	t.Parallel()
	a, _, key := memberAndSeats(t)
	defineField(t, a, key, map[string]any{"key": "tier", "label": "Tier", "type": "enum", "options": []map[string]any{
		{"value": "gold", "label": "Gold"}, {"value": "silver", "label": "Silver"}, {"value": "bronze", "label": "Bronze"}}})
	defineField(t, a, key, map[string]any{"key": "renewal", "label": "Renewal", "type": "date"})
	defineField(t, a, key, map[string]any{"key": "channels", "label": "Channels", "type": "multiEnum", "options": []map[string]any{
		{"value": "sms", "label": "SMS"}, {"value": "mail", "label": "Mail"}}})
	defineField(t, a, key, map[string]any{"key": "work", "label": "Work email", "type": "email"})
	people := []map[string]any{
		{"email": "a@example.com", "customFields": map[string]any{"seats": 10, "tier": "gold", "renewal": "2027-01-01", "channels": []string{"sms"}, "work": "Ann@Corp.example"}},
		{"email": "b@example.com", "customFields": map[string]any{"seats": 9.5, "tier": "silver", "renewal": "2027-01-31", "channels": []string{"mail"}}},
		{"email": "c@example.com", "customFields": map[string]any{"seats": 200, "tier": "bronze", "renewal": "2027-02-01", "channels": []string{"mail", "sms"}}},
		{"email": "d@example.com"},
	}
	for _, p := range people { // oldest first
		createContact(t, a, key, p)
	}
	emails := func(r *testkit.Response) string {
		t.Helper()
		var list api.ContactList
		if r.JSON(t, &list); r.Status != 200 {
			t.Fatalf("list: %d %s", r.Status, r.Body)
		}
		var out []string
		for _, c := range list.Contacts {
			out = append(out, c.Email[:1])
		}
		slices.Sort(out)
		return strings.Join(out, "")
	}
	for query, want := range map[string]string{
		"field=seats:gte:10":          "ac",
		"field=seats:gt:10":           "c",
		"field=seats:lt:10":           "b",
		"field=seats:lte:9.5":         "b",
		"field=seats:eq:200.0":        "c",
		"field=tier:in:gold%7Csilver": "ab",
		"field=renewal:gte:2027-01-01&field=renewal:lt:2027-02-01": "ab",
		"field=channels:eq:sms":                     "ac",
		"field=work:eq:ANN@corp.EXAMPLE":            "a",
		"field=seats:exists":                        "abc",
		"field=seats:gte:10&field=channels:eq:mail": "c",
		"field=tier:eq:gold&tag=none":               "",
	} {
		if got := emails(a.Do("GET", "/public/v1/contacts?"+query, key, nil)); got != want {
			t.Errorf("%s: %q, want %q", query, got, want)
		}
	}
	r := a.Do("GET", "/public/v1/contacts/export?field=seats:gte:10", key, nil)
	if n := strings.Count(string(r.Body), "\n"); r.Status != 200 || n != 2 {
		t.Errorf("export filtered by seats: %d, %d contacts", r.Status, n)
	}
	for _, query := range []string{"field=nope:eq:1", "field=seats:between:1", "field=tier:gt:gold", "field=seats:eq:many",
		"field=tier:eq:platinum", "field=seats:gte:10&sort=updatedAt", "field=a:exists&field=b:exists&field=c:exists&field=d:exists&field=e:exists&field=f:exists"} {
		r := a.Do("GET", "/public/v1/contacts?"+query, key, nil)
		if e := r.Error(t); r.Status != 400 || !(hasFieldError(e, "query.field") || hasFieldError(e, "query.sort")) {
			t.Errorf("%s: %d %s", query, r.Status, r.Body)
		}
	}

	// 200 newer contacts without values. An equality is answered by the custom fields' index:
	// the page holds the match, however far down it is. A range is not: a page of 1 walks 160
	// of them, finds nothing and ends early; its cursor walks on, and the walk reaches it.
	more := make([]any, 200)
	for i := range more {
		more[i] = map[string]any{"email": fmt.Sprintf("n%03d@example.com", i)}
	}
	batch(t, a, key, "create", more...)
	var page api.ContactList
	a.Do("GET", "/public/v1/contacts?limit=1&field=tier:eq:bronze", key, nil).JSON(t, &page)
	if len(page.Contacts) != 1 || page.Contacts[0].Email != "c@example.com" || page.NextCursor != nil {
		t.Errorf("tier:eq:bronze: %d contacts, cursor %v: want c@example.com alone", len(page.Contacts), page.NextCursor)
	}
	page = api.ContactList{}
	a.Do("GET", "/public/v1/contacts?limit=1&field=seats:gt:100", key, nil).JSON(t, &page)
	if len(page.Contacts) != 0 || page.NextCursor == nil {
		t.Fatalf("seats:gt:100, the first page: %d contacts, cursor %v: want none and a cursor", len(page.Contacts), page.NextCursor)
	}
	if found, _ := pagesOf(t, a, key, "limit=1&field=seats:gt:100", *page.NextCursor, 10); !slices.Equal(found, []string{"c@example.com"}) {
		t.Errorf("walking on from the cursor found %v, want c@example.com", found)
	}
}

// pagesOf lists the pages of the filtered query from cursor ("": the first) on, at most max
// of them, and returns the emails listed, in order, and how many pages held none.
func pagesOf(t *testing.T, a *testkit.API, key, filter, cursor string, max int) (found []string, empty int) {
	t.Helper()
	for pages := 0; pages < max; pages++ {
		query := filter
		if cursor != "" {
			query += "&cursor=" + url.QueryEscape(cursor)
		}
		var page api.ContactList
		r := a.Do("GET", "/public/v1/contacts?"+query, key, nil)
		if r.JSON(t, &page); r.Status != 200 {
			t.Fatalf("%s: %d %s", query, r.Status, r.Body)
		}
		for _, c := range page.Contacts {
			found = append(found, c.Email)
		}
		if len(page.Contacts) == 0 {
			empty++
		}
		if page.NextCursor == nil {
			return found, empty
		}
		cursor = *page.NextCursor
	}
	t.Fatalf("%s: more than %d pages", filter, max)
	return nil, 0
}

// An equality on a custom field is answered by the custom fields' index: paged one contact at
// a time, every page holds the next match in the list's order however sparse the matches are
// (a walk of 160 contacts, a page of 1's, would leave pages empty). A value held by more
// contacts than the index returns at once (80 for a page of 1) is walked instead: the pages
// list the same contacts in the same order, some of them empty.
func TestFieldEqualityUsesTheIndex(t *testing.T) {
	t.Parallel()
	a, _, key := memberAndSeats(t)
	defineField(t, a, key, map[string]any{"key": "tier", "label": "Tier", "type": "enum", "options": []map[string]any{
		{"value": "gold", "label": "Gold"}, {"value": "silver", "label": "Silver"}, {"value": "bronze", "label": "Bronze"}}})
	items := make([]any, 300)
	for i := range items {
		tier := map[bool]string{true: "gold", false: "bronze"}[i < 150]
		item := map[string]any{"email": fmt.Sprintf("p%03d@example.com", i)}
		if i%50 == 7 {
			tier = "silver"
		}
		if i%100 == 7 {
			item["tags"] = []string{"vip"}
		}
		item["customFields"] = map[string]any{"tier": tier, "seats": i}
		items[i] = item
	}
	batch(t, a, key, "create", items...)

	r := a.Do("GET", "/public/v1/contacts/export", key, nil)
	if r.Status != 200 {
		t.Fatalf("export: %d %s", r.Status, r.Body)
	}
	var order []api.Contact // the list's order
	for _, line := range strings.Split(strings.TrimSpace(string(r.Body)), "\n") {
		var c api.Contact
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatal(err)
		}
		order = append(order, c)
	}
	holders := func(keep func(tier string, seats float64, tags []string) bool) []string {
		var out []string
		for _, c := range order {
			f := customFieldsOf(t, c)
			if keep(f["tier"].(string), f["seats"].(float64), c.Tags) {
				out = append(out, c.Email)
			}
		}
		return out
	}
	for _, g := range order[:4] { // the first stretch of a page of 1 walks these
		if customFieldsOf(t, g)["tier"] == "gold" {
			t.Fatalf("%s, among the newest, is gold: the batch's order is not what the test is written for", g.Email)
		}
	}

	for filter, want := range map[string][]string{
		"limit=1&field=tier:eq:silver": holders(func(tier string, _ float64, _ []string) bool { return tier == "silver" }),
		"limit=2&field=tier:eq:silver&tag=vip": holders(func(tier string, _ float64, tags []string) bool {
			return tier == "silver" && slices.Contains(tags, "vip")
		}),
		"limit=1&field=tier:in:silver%7Cbronze&field=seats:lt:100": holders(func(tier string, seats float64, _ []string) bool {
			return tier == "silver" && seats < 100
		}),
	} {
		found, empty := pagesOf(t, a, key, filter, "", 20)
		if len(want) < 2 || !slices.Equal(found, want) || empty > 0 {
			t.Errorf("%s: %v (%d empty pages), want %v", filter, found, empty, want)
		}
	}
	gold := holders(func(tier string, _ float64, _ []string) bool { return tier == "gold" })
	found, empty := pagesOf(t, a, key, "limit=1&field=tier:eq:gold", "", 400)
	if len(gold) < 100 || !slices.Equal(found, gold) || empty == 0 {
		t.Errorf("tier:eq:gold: %d contacts (%d empty pages), want the %d gold ones, some pages empty", len(found), empty, len(gold))
	}
}
