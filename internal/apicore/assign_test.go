package apicore

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/contactd/contactd/gen/api"
)

// requestBodies are a new value of each request body type of the API.
var requestBodies = map[string]func() any{
	"CreateContact":  func() any { return new(api.CreateContactJSONRequestBody) },
	"UpdateContact":  func() any { return new(api.UpdateContactJSONRequestBody) },
	"Activity":       func() any { return new(api.RecordContactActivityJSONRequestBody) },
	"AddProperty":    func() any { return new(api.AddContactPropertyJSONRequestBody) },
	"Tags":           func() any { return new(api.AddContactTagsJSONRequestBody) },
	"BatchContacts":  func() any { return new(api.BatchContactsJSONRequestBody) },
	"MergeContacts":  func() any { return new(api.MergeContactsJSONRequestBody) },
	"CreateWebhook":  func() any { return new(api.CreateWebhookJSONRequestBody) },
	"UpdateWebhook":  func() any { return new(api.UpdateWebhookJSONRequestBody) },
	"FilterTest":     func() any { return new(api.TestWebhookFilterJSONRequestBody) },
	"ReplayWebhook":  func() any { return new(api.ReplayWebhookJSONRequestBody) },
	"map of any":     func() any { return new(map[string]any) },
	"slice of bytes": func() any { return new(struct{ B []uint8 }) },
}

// assignBodies are bodies for every request type, the valid and the odd: nulls, numbers an
// int cannot hold, wrong types, names that differ in case, members of no field.
var assignBodies = []string{
	`{"email":"a@example.com","name":"A","tags":["lead","vip"],"phone":"+1 555 010 0100","address":"123 N Main St, Springfield, IL 62704"}`,
	`{"email":"a@example.com","crmFields":{"name":"Salesforce","createdDate":"2026-11-21T09:30:00.123Z","url":"https://x"},"assignedUserEmailId":"u@example.com"}`,
	`{"email":"a@example.com","name":null,"tags":null,"crmFields":null}`,
	`{"email":"not an email"}`,
	`{"email":42}`,
	`{"Email":"a@example.com"}`,
	`{"email":"a@example.com","unknown":{"deep":[1,2,3]}}`,
	`{"name":null,"phone":"1","email":"b@example.com","recordStatus":"Active","assignedUserEmailId":null}`,
	`{"crmFields":{"name":null,"createdDate":null,"stage":"New"}}`,
	`{"crmFields":{"createdDate":"2026-11-21T09:30:00Z"}}`,
	`{"crmFields":{"createdDate":"yesterday"}}`,
	`{"type":"EmailOpened","activityId":"x1","occurredAt":"2026-11-21T09:30:00.123Z","details":{"n":1.5,"big":1e300,"list":[1,"a",null,true],"o":{}}}`,
	`{"type":"EmailOpened","details":{"huge":1e400}}`,
	`{"type":"EmailOpened","occurredAt":null,"details":null}`,
	`{"address":"1 Main St"}`,
	`{"tags":["a","b","c"]}`,
	`{"tags":[]}`,
	`{"tags":[1]}`,
	`{"mode":"upsert","contacts":[{"email":"x@example.com","tags":["t"]},{"email":"y@example.com","name":"Y"},{"bad":true}]}`,
	`{"primaryContactId":"p","duplicateContactIds":["a","b"],"dryRun":true}`,
	`{"dryRun":"yes"}`,
	`{"url":"https://example.com/h","eventType":"TagsAdded","maxDeliveriesPerSecond":10,"filter":{"data.tags":{"$in":["vip"]},"$or":[{"a":1},{"b":{"$gt":2.5}}]}}`,
	`{"maxDeliveriesPerSecond":10.0}`,
	`{"maxDeliveriesPerSecond":1e1}`,
	`{"maxDeliveriesPerSecond":99999999999999999999}`,
	`{"maxDeliveriesPerSecond":-3}`,
	`{"maxDeliveriesPerSecond":null,"filter":null,"paused":false}`,
	`{"filter":{"x":{"$exists":true}},"maxDeliveriesPerSecond":5,"paused":true}`,
	`{"event":{"type":"TagsAdded","data":{"tags":["vip"],"n":3}},"filter":{"type":"TagsAdded"}}`,
	`{"since":"2026-11-01T00:00:00.000Z","until":"2026-11-02T00:00:00.000Z"}`,
	`{"since":"2026-11-01","until":5}`,
	`{"B":[1,2,255]}`,
	`{"B":"AQI="}`,
	`[]`,
	`"text"`,
	`null`,
	`{}`,
}

// TestAssignIsUnmarshal: for every request type and body, Assign of the decoded body gives
// what json.Unmarshal of the bytes gives, or declines (and the bytes are decoded then); it
// declines only what json.Unmarshal refuses or reads by rules it does not follow.
func TestAssignIsUnmarshal(t *testing.T) {
	assigned := 0
	for _, body := range assignBodies {
		for name, newBody := range requestBodies {
			if sameAsUnmarshal(t, name, []byte(body), newBody) {
				assigned++
			}
		}
	}
	// most bodies are some type's: a converter declining everything would pass the rest
	if assigned < len(assignBodies) {
		t.Errorf("assigned %d of %d bodies × types: Assign declines nearly everything", assigned, len(assignBodies)*len(requestBodies))
	}
}

// sameAsUnmarshal checks Assign against json.Unmarshal for one body and type; true when Assign
// took the body.
func sameAsUnmarshal(t testing.TB, name string, body []byte, newBody func() any) bool {
	t.Helper()
	v, err := DecodeJSON(body)
	if err != nil {
		return false
	}
	want, got := newBody(), newBody()
	wantErr := json.Unmarshal(body, want)
	if err := Assign(got, v); err != nil {
		if !errors.Is(err, errNotAssigned) && wantErr == nil {
			t.Errorf("%s %s: Assign failed (%v) where json.Unmarshal did not", name, body, err)
		}
		return false
	}
	if wantErr != nil {
		t.Errorf("%s %s: Assign took what json.Unmarshal refuses (%v): %#v", name, body, wantErr, got)
		return false
	}
	if !sameValue(got, want) {
		t.Errorf("%s %s:\nAssign:    %#v\nUnmarshal: %#v", name, body, got, want)
	}
	return true
}

// sameValue is reflect.DeepEqual, except that json.RawMessages (a batch's items) are the same
// when they hold the same JSON value: Assign encodes them again from the decoded values.
func sameValue(a, b any) bool {
	if ra, ok := a.(*api.BatchContactsRequest); ok {
		rb := b.(*api.BatchContactsRequest)
		if len(ra.Contacts) != len(rb.Contacts) || !reflect.DeepEqual(ra.Mode, rb.Mode) {
			return false
		}
		for i := range ra.Contacts {
			va, ea := DecodeJSON(ra.Contacts[i])
			vb, eb := DecodeJSON(rb.Contacts[i])
			if ea != nil || eb != nil || !reflect.DeepEqual(va, vb) {
				return false
			}
		}
		return (ra.Contacts == nil) == (rb.Contacts == nil)
	}
	return reflect.DeepEqual(a, b)
}

// TestAssignTakesTheValidatedMember: a member named twice is the last one, the one the
// validator checked, where json.Unmarshal merges the two objects into one struct (so a field
// of the first, never validated, would reach the handler).
func TestAssignTakesTheValidatedMember(t *testing.T) {
	body := []byte(`{"email":"a@example.com","crmFields":{"name":"` + string(bytes.Repeat([]byte("x"), 300)) + `"},"crmFields":{"stage":"New"}}`)
	v, err := DecodeJSON(body)
	if err != nil {
		t.Fatal(err)
	}
	var got api.CreateContactRequest
	if err := Assign(&got, v); err != nil {
		t.Fatal(err)
	}
	if got.CrmFields == nil || got.CrmFields.Name != nil || got.CrmFields.Stage == nil || *got.CrmFields.Stage != "New" {
		t.Errorf("crmFields named twice: got %+v, want the last one only", got.CrmFields)
	}
	var merged api.CreateContactRequest
	if err := json.Unmarshal(body, &merged); err != nil || merged.CrmFields.Name == nil {
		t.Errorf("json.Unmarshal no longer merges (%v): the comment above is out of date", err)
	}
}

// FuzzAssign: any JSON body without a member named twice, as every request type.
func FuzzAssign(f *testing.F) {
	for _, body := range assignBodies {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if namesAMemberTwice(body) {
			t.Skip("a member named twice: Assign takes the last one by design")
		}
		for name, newBody := range requestBodies {
			sameAsUnmarshal(t, name, body, newBody)
		}
	})
}

// namesAMemberTwice tells whether some object of the JSON names a member twice.
func namesAMemberTwice(body []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(body))
	type frame struct {
		object bool
		names  map[string]bool
		key    bool // the next token of an object is a name
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF || err != nil {
			return false
		}
		top := (*frame)(nil)
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.key {
			if s, ok := tok.(string); ok {
				if top.names[s] {
					return true
				}
				top.names[s] = true
				top.key = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			if top != nil && top.object {
				top.key = true
			}
			stack = append(stack, &frame{object: true, names: map[string]bool{}, key: true})
			continue
		case json.Delim('['):
			if top != nil && top.object {
				top.key = true
			}
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			continue
		}
		if top != nil && top.object {
			top.key = true // a member's value read: a name comes next
		}
	}
}

// BenchmarkAssign: a create's typed request built from the values the validator decoded,
// against json.Unmarshal of the body (a second decode, which Assign spares the request).
func BenchmarkAssign(b *testing.B) {
	body := []byte(`{"email":"jane@example.com","name":"Jane Roe","phone":"555-010-0199","tags":["lead","vip","open-house"],
		"address":"123 N Main St Apt 4, Springfield, IL 62704","crmFields":{"name":"acme","stage":"lead","source":"web"}}`)
	v, err := DecodeJSON(body)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("json.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var req api.CreateContactRequest
			if err := json.Unmarshal(body, &req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Assign", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var req api.CreateContactRequest
			if err := Assign(&req, v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
