package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/testkit"
)

// TestTheHandlerGetsWhatWasValidated: a body is decoded once, and the handler's request is
// built from the values the validator checked. A member named twice is the last one, as the
// validator saw it: a first crmFields with a name over the spec's 64 characters never reaches
// the contact (json.Unmarshal into the typed request, as before, merged the two objects and
// stored it). The same for a batch's item.
func TestTheHandlerGetsWhatWasValidated(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	accountID, key := a.Account("acme")
	long := strings.Repeat("x", 300)

	r := a.Do("POST", "/public/v1/contact", key,
		`{"email":"twice@example.com","tags":["first"],"crmFields":{"name":"`+long+`"},"crmFields":{"stage":"New"},"tags":["last"]}`)
	if r.Status != http.StatusOK {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	var created api.CreateContactResult
	r.JSON(t, &created)
	if c := created.Contact; c.CrmFields == nil || c.CrmFields.Name != nil || c.CrmFields.Stage == nil || *c.CrmFields.Stage != "New" ||
		len(c.Tags) != 1 || c.Tags[0] != "last" {
		t.Errorf("created %+v with crmFields %+v: want only the last crmFields and tags", c, c.CrmFields)
	}

	r = a.Do("POST", "/public/v1/contacts/batch", key,
		`{"contacts":[{"email":"batch-twice@example.com","crmFields":{"name":"`+long+`"},"crmFields":{"stage":"Won"}}]}`)
	if r.Status != http.StatusOK {
		t.Fatalf("batch: %d %s", r.Status, r.Body)
	}
	var batch api.BatchContactsResult
	r.JSON(t, &batch)
	if len(batch.Results) != 1 || batch.Results[0].Status != api.BatchContactItemResultStatusCreated {
		t.Fatalf("batch results %+v", batch.Results)
	}

	var stored int
	if err := a.Store.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM contacts WHERE account_id = $1 AND (crm_name IS NOT NULL OR crm_stage IS NULL)`, accountID).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != 0 {
		t.Errorf("%d contacts stored with a crmFields member the validator never checked", stored)
	}
}

// TestANULStopsAtTheDoor: PostgreSQL's text cannot hold a NUL, so a body string carrying one
// (a value, an object's key, nested anywhere) is refused with 400 naming each field, before
// any statement: it used to fail the statement with a 500, and a create's failed the group
// commit other accounts' creates shared. The same item through a batch names the item's field.
func TestANULStopsAtTheDoor(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	accountID, key := a.Account("acme")
	var created api.CreateContactResult
	a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "held@example.com"}).JSON(t, &created)
	id := created.Contact.ContactId
	cases := []struct {
		method, path, body string
		fields             []string
	}{
		{"POST", "/public/v1/contact", `{"email":"nul@example.com","name":"A\u0000B","tags":["ok","t\u0000"]}`, []string{"body.name", "body.tags.1"}},
		{"POST", "/public/v1/contact", `{"email":"nul@example.com","crmFields":{"name":"\u0000"}}`, []string{"body.crmFields.name"}},
		{"PATCH", "/public/v1/contact/" + id, `{"name":"x\u0000"}`, []string{"body.name"}},
		{"POST", "/public/v1/contact/" + id + "/tags", `{"tags":["\u0000x"]}`, []string{"body.tags.0"}},
		{"POST", "/public/v1/contact/" + id + "/activity", `{"type":"FormSubmission","details":{"form":{"k\u0000":"v","v":"a\u0000"}}}`,
			[]string{"body.details.form.k\x00", "body.details.form.v"}},
		{"POST", "/public/v1/fields", `{"key":"plan","label":"P\u0000","type":"text"}`, []string{"body.label"}},
		{"POST", "/public/v1/segments", `{"name":"s\u0000","filter":{"groups":[{"conditions":[{"attribute":"name","operator":"eq","value":"v\u0000"}]}]}}`,
			[]string{"body.filter.groups.0.conditions.0.value", "body.name"}},
		{"POST", "/public/v1/contacts/batch", `{"contacts":[{"email":"b@example.com"},{"email":"c@example.com","name":"\u0000"}]}`, []string{"body.contacts.1.name"}},
	}
	for _, c := range cases {
		r := a.Do(c.method, c.path, key, c.body)
		e := r.Error(t)
		if r.Status != http.StatusBadRequest || e.Code != api.ErrorCodeInvalidRequest || e.Data == nil || e.Data.Errors == nil {
			t.Errorf("%s %s: %d %s, want 400 InvalidRequest naming %v", c.method, c.path, r.Status, r.Body, c.fields)
			continue
		}
		var got []string
		for _, f := range *e.Data.Errors {
			if f.Reason == "encoding" {
				got = append(got, f.Field)
			}
		}
		if strings.Join(got, " ") != strings.Join(c.fields, " ") {
			t.Errorf("%s %s: NULs named at %v, want %v (%s)", c.method, c.path, got, c.fields, r.Body)
		}
	}
	if n := a.Count(t, `SELECT (SELECT count(*) FROM contacts WHERE account_id = $1) + (SELECT count(*) FROM contact_fields WHERE account_id = $1)
		+ (SELECT count(*) FROM segments WHERE account_id = $1) + (SELECT count(*) FROM webhook_events WHERE account_id = $1)`, accountID); n != 1 {
		t.Errorf("%d contacts, fields, segments and events stored, want the one contact made before", n)
	}
}
