package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/testkit"
)

var timestampRe = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

func createContact(t *testing.T, a *testkit.API, key string, body any) api.CreateContactResult {
	t.Helper()
	r := a.Do("POST", "/public/v1/contact", key, body)
	if r.Status != http.StatusOK {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	var out api.CreateContactResult
	r.JSON(t, &out)
	return out
}

func TestCreateContactFull(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	out := createContact(t, a, key, map[string]any{
		"email": "Jane.Doe@Example.com", "name": "Jane Doe", "phone": "+1 (555) 010-2030",
		"tags": []string{" lead ", "Lead", "open-house"}, "address": "123 N Main St Apt 4, Springfield, IL 62704",
		"crmFields":           map[string]any{"name": "Salesforce", "stage": "New", "createdDate": "2026-11-20T16:04:05+02:00"},
		"assignedUserEmailId": "agent@example.com",
	})
	c := out.Contact
	if len(out.Warnings) != 0 {
		t.Errorf("warnings = %v, want none", out.Warnings)
	}
	if c.Email != "Jane.Doe@Example.com" || *c.Name != "Jane Doe" || *c.Phone != "+1 (555) 010-2030" {
		t.Errorf("details not stored as given: %+v", c)
	}
	if c.EmailStatus != api.EmailStatusPending || c.RecordStatus != api.Marketing || c.LeadScore != 0 {
		t.Errorf("defaults: emailStatus %s recordStatus %s leadScore %d", c.EmailStatus, c.RecordStatus, c.LeadScore)
	}
	if strings.Join(c.Tags, ",") != "lead,open-house" {
		t.Errorf("tags = %q, want trimmed, deduped, first spelling kept", c.Tags)
	}
	if e := c.Engagement; e.NumOfFormSubmissions != 0 || e.LastFormSubmissionDate != nil || e.LastEmailSentDate != nil {
		t.Errorf("engagement = %+v, want zero counters and no dates", e)
	}
	if len(c.Properties) != 1 {
		t.Fatalf("properties = %+v, want one", c.Properties)
	}
	want := api.Address{AptOrUnitNumber: "4", StreetAddress: "123 N Main St", City: "Springfield", County: "Sangamon County", State: "IL", Zip: "62704"}
	if got := c.Properties[0].Address; got != want {
		t.Errorf("address = %+v, want %+v", got, want)
	}
	if got := c.CrmFields.CreatedDate.String(); got != "2026-11-20T14:04:05.000Z" {
		t.Errorf("crmFields.createdDate = %s, want UTC with milliseconds", got)
	}
	if !regexp.MustCompile(`^http://contactd\.test/consent/cs_[0-9A-Za-z]{22}$`).MatchString(c.ProofOfConsentUrl) {
		t.Errorf("proofOfConsentUrl = %q", c.ProofOfConsentUrl)
	}
	if !timestampRe.MatchString(c.CreatedAt.String()) {
		t.Errorf("createdAt = %s", c.CreatedAt)
	}
	// GET returns the same contact, bare.
	r := a.Do("GET", "/public/v1/contact?contactId="+c.ContactId, key, nil)
	var got api.Contact
	r.JSON(t, &got)
	if r.Status != 200 || got.ContactId != c.ContactId || got.CreatedAt != c.CreatedAt || len(got.Properties) != 1 ||
		strings.Join(got.Tags, ",") != "lead,open-house" || *got.AssignedUserEmailId != "agent@example.com" {
		t.Errorf("GET = %d %s", r.Status, r.Body)
	}
	// the consent record names the key, never the key itself.
	var keyName, prefix, fields string
	err := a.Store.Pool.QueryRow(context.Background(),
		"SELECT consent_api_key_name, consent_api_key_prefix, consent_fields::text FROM contacts WHERE contact_id = $1", c.ContactId).Scan(&keyName, &prefix, &fields)
	if err != nil || keyName != "acme-key" || !strings.HasPrefix(key, prefix) || len(prefix) != 11 || strings.Contains(fields, key) {
		t.Errorf("consent = %q %q %q %v", keyName, prefix, fields, err)
	}
}

func TestCreateContactUnparseableAddressWarns(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	out := createContact(t, a, key, map[string]any{"email": "a@example.com", "address": "somewhere over the rainbow"})
	if len(out.Warnings) != 1 || out.Warnings[0] != api.InvalidInputAddress {
		t.Errorf("warnings = %v, want [InvalidInputAddress]", out.Warnings)
	}
	if len(out.Contact.Properties) != 0 {
		t.Errorf("properties = %+v, want none", out.Contact.Properties)
	}
	var n int
	if err := a.Store.Pool.QueryRow(context.Background(), "SELECT count(*) FROM properties").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d properties stored, want 0", n)
	}
}

func TestCreateContactMinimalIsEmptyNotNull(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	r := a.Do("POST", "/public/v1/contact", key, `{"email":"min@example.com"}`)
	body := string(r.Body)
	for _, want := range []string{`"tags":[]`, `"properties":[]`, `"warnings":[]`} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %s: %s", want, body)
		}
	}
	for _, absent := range []string{`"name"`, `"phone"`, `null`, `"crmFields"`, `"lastEmailSentDate"`} {
		if strings.Contains(body, absent) {
			t.Errorf("body has %s: %s", absent, body)
		}
	}
}

func TestCreateContactDuplicateEmail(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	first := createContact(t, a, key, map[string]any{"email": "dup@example.com"})
	r := a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "DUP@Example.COM", "name": "Other"})
	e := r.Error(t)
	if r.Status != 400 || e.Code != api.ErrorCodeDuplicateContact || e.Data == nil || *e.Data.ContactId != first.Contact.ContactId {
		t.Errorf("duplicate = %d %s", r.Status, r.Body)
	}
	// another account may use the same email.
	_, other := a.Account("other")
	createContact(t, a, other, map[string]any{"email": "dup@example.com"})
}

// TestCreateContactDuplicateRace: concurrent creates go to PostgreSQL in groups, so racing
// creates of one email meet both within a group and across groups; for each email exactly one
// wins, with its own request's details, and every other gets DuplicateContact naming it. The
// race across groups is proven, not hoped for: the test's open transaction holds the four
// emails first, and lets go only once the database shows as many groups as may fly at once
// (two, with two cores) waiting for them; those then meet each other.
func TestCreateContactDuplicateRace(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	account, key := a.Account("acme")
	// a subscriber: the winners' events and deliveries are written by their creates' statements
	if r := a.Do("POST", "/public/v1/webhooks", key, map[string]any{"url": "https://hooks.example.com/race", "eventType": "TagsAdded"}); r.Status != 200 {
		t.Fatalf("subscribe: %d %s", r.Status, r.Body)
	}
	const emails, racers = 4, 8
	type outcome struct {
		status int
		body   []byte
	}
	outcomes := make([][]outcome, emails)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for e := range emails {
		outcomes[e] = make([]outcome, racers)
		for i := range racers {
			wg.Go(func() {
				<-start
				email := fmt.Sprintf("Race%d@Example.com", e)
				if i%2 == 1 {
					email = strings.ToLower(email)
				}
				r := a.Do("POST", "/public/v1/contact", key, map[string]any{"email": email, "name": fmt.Sprintf("racer %d/%d", e, i),
					"address": fmt.Sprintf("%d Main St, Springfield, IL 62704", 100+i), "tags": []string{"race"}})
				outcomes[e][i] = outcome{r.Status, r.Body}
			})
		}
	}
	held := make([]string, emails)
	for e := range held {
		held[e] = fmt.Sprintf("race%d@example.com", e)
	}
	hold := holdEmails(t, a, account, held...)
	close(start)
	flying := min(runtime.GOMAXPROCS(0), 2)
	testkit.Eventually(t, fmt.Sprintf("%d groups of creates waiting for the held emails", flying), func() bool { return a.LockWaiters(t) >= flying })
	if err := hold.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for e := range emails {
		var winner *api.CreateContactResult
		var winnerName string
		var losers []string
		for i, o := range outcomes[e] {
			switch {
			case o.status == 200:
				if winner != nil {
					t.Errorf("email %d: a second winner, racer %d: %s", e, i, o.body)
				}
				winner = new(api.CreateContactResult)
				if err := json.Unmarshal(o.body, winner); err != nil {
					t.Fatal(err)
				}
				winnerName = fmt.Sprintf("racer %d/%d", e, i)
			case o.status == 400:
				var body api.Error
				if err := json.Unmarshal(o.body, &body); err != nil || body.Code != api.ErrorCodeDuplicateContact || body.Data == nil || body.Data.ContactId == nil {
					t.Errorf("email %d racer %d: %s", e, i, o.body)
					continue
				}
				losers = append(losers, *body.Data.ContactId)
			default:
				t.Errorf("email %d racer %d: %d %s", e, i, o.status, o.body)
			}
		}
		if winner == nil {
			t.Errorf("email %d: no winner", e)
			continue
		}
		if winner.Contact.Name == nil || *winner.Contact.Name != winnerName || len(winner.Contact.Properties) != 1 {
			t.Errorf("email %d: the winner's response is not its own request's contact: %+v", e, winner.Contact)
		}
		for _, id := range losers {
			if id != winner.Contact.ContactId {
				t.Errorf("email %d: DuplicateContact names %s, the winner is %s", e, id, winner.Contact.ContactId)
			}
		}
		var name string
		var properties int
		if err := a.Store.Pool.QueryRow(context.Background(), `SELECT c.name, (SELECT count(*) FROM properties p WHERE p.contact_id = c.contact_id)
			FROM contacts c WHERE c.contact_id = $1`, winner.Contact.ContactId).Scan(&name, &properties); err != nil || name != winnerName || properties != 1 {
			t.Errorf("email %d: stored %q with %d properties (%v); want %q with 1", e, name, properties, err, winnerName)
		}
	}
	var rows, properties, events, deliveries int
	if err := a.Store.Pool.QueryRow(context.Background(), `SELECT count(*), (SELECT count(*) FROM properties),
		(SELECT count(*) FROM webhook_events), (SELECT count(*) FROM webhook_deliveries) FROM contacts`).Scan(&rows, &properties, &events, &deliveries); err != nil {
		t.Fatal(err)
	}
	if rows != emails || properties != emails || events != emails || deliveries != emails {
		t.Errorf("%d contacts, %d properties, %d events and %d deliveries exist; want %d of each (the losers wrote none)",
			rows, properties, events, deliveries, emails)
	}
	testkit.CheckInvariants(t, a.Store)
}

func TestCreateContactReportsEveryViolation(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	r := a.Do("POST", "/public/v1/contact", key, map[string]any{
		"email": "not-an-email", "name": strings.Repeat("n", 65), "phone": "12345",
		"tags": []string{strings.Repeat("t", 33)}, "address": strings.Repeat("a", 257),
		"assignedUserEmailId": "nope", "leadScore": 5, "crmFields": map[string]any{"createdDate": "yesterday"},
	})
	e := r.Error(t)
	if r.Status != 400 || e.Code != api.ErrorCodeInvalidRequest {
		t.Fatalf("got %d %s", r.Status, r.Body)
	}
	got := map[string]string{}
	for _, f := range *e.Data.Errors {
		got[f.Field] = f.Reason
	}
	want := map[string]string{
		"body.email": "format", "body.name": "maxLength", "body.phone": "pattern", "body.tags.0": "maxLength",
		"body.address": "maxLength", "body.assignedUserEmailId": "format", "body.leadScore": "additionalProperties",
		"body.crmFields.createdDate": "format",
	}
	for f, reason := range want {
		if got[f] != reason {
			t.Errorf("field %s: reason %q, want %q (all: %v)", f, got[f], reason, got)
		}
	}
	var n int
	if err := a.Store.Pool.QueryRow(context.Background(), "SELECT count(*) FROM contacts").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("a rejected create stored %d contacts", n)
	}
}

// The body validated is the whole body: anything after the JSON value is refused, where a
// decoder reading one value would have written the first and dropped the rest unseen.
func TestBodyWithDataAfterItsValueIsRefused(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	for path, body := range map[string]string{
		"/public/v1/contact":        `{"email":"first@example.com"} {"email":"second@example.com"}`,
		"/public/v1/contacts/batch": `{"contacts":[{"email":"first@example.com"}]}]`,
	} {
		r := a.Do("POST", path, key, body)
		e := r.Error(t)
		if r.Status != 400 || e.Code != api.ErrorCodeInvalidRequest || e.Data == nil || e.Data.Errors == nil ||
			len(*e.Data.Errors) != 1 || (*e.Data.Errors)[0].Field != "body" || (*e.Data.Errors)[0].Reason != "json" {
			t.Errorf("%s: got %d %s, want 400 with body's json error", path, r.Status, r.Body)
		}
	}
	if n := a.Count(t, "SELECT count(*) FROM contacts"); n != 0 {
		t.Errorf("refused bodies stored %d contacts", n)
	}
}

func TestCreateContactFieldBoundaries(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	local64 := strings.Repeat("l", 64)
	domain := strings.Repeat("d", 63) + "." + strings.Repeat("e", 63) + "." + strings.Repeat("f", 57) + ".com" // 188
	email254 := local64 + "@" + domain[:254-65]
	if len(email254) != 254 {
		t.Fatalf("len %d", len(email254))
	}
	tests := []struct {
		name  string
		body  map[string]any
		field string // "" = accepted
	}{
		{"local part 64", map[string]any{"email": local64 + "@example.com"}, ""},
		{"local part 65", map[string]any{"email": local64 + "l@example.com"}, "body.email"},
		{"email 254", map[string]any{"email": email254}, ""},
		{"email 255", map[string]any{"email": "x" + email254[1:] + "x"}, "body.email"},
		{"email empty", map[string]any{"email": ""}, "body.email"},
		{"email with display name", map[string]any{"email": "Bob <bob@example.com>"}, "body.email"},
		{"name 64", map[string]any{"email": "n64@example.com", "name": strings.Repeat("n", 64)}, ""},
		{"name 65", map[string]any{"email": "n65@example.com", "name": strings.Repeat("n", 65)}, "body.name"},
		{"tag 32", map[string]any{"email": "t32@example.com", "tags": []string{strings.Repeat("t", 32)}}, ""},
		{"tag 33", map[string]any{"email": "t33@example.com", "tags": []string{strings.Repeat("t", 33)}}, "body.tags.0"},
		{"tag blank", map[string]any{"email": "tb@example.com", "tags": []string{"   "}}, "body.tags.0"},
		{"101 tags", map[string]any{"email": "t101@example.com", "tags": manyTags(101)}, "body.tags"},
		{"address 256", map[string]any{"email": "a256@example.com", "address": strings.Repeat("a", 256)}, ""},
		{"assigned user invalid", map[string]any{"email": "au@example.com", "assignedUserEmailId": "x@"}, "body.assignedUserEmailId"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := a.Do("POST", "/public/v1/contact", key, tc.body)
			if tc.field == "" {
				if r.Status != 200 {
					t.Errorf("got %d %s, want 200", r.Status, r.Body)
				}
				return
			}
			e := r.Error(t)
			if r.Status != 400 || e.Code != api.ErrorCodeInvalidRequest || e.Data == nil || (*e.Data.Errors)[0].Field != tc.field {
				t.Errorf("got %d %s, want 400 on %s", r.Status, r.Body, tc.field)
			}
		})
	}
}

func TestPhonePattern(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	for i, tc := range []struct {
		phone string
		ok    bool
	}{
		{"5550102030", true}, {"555-010-2030", true}, {"555.010.2030", true}, {"(555) 010-2030", true},
		{"+1 555 010 2030", true}, {"+44 (555) 010-2030", true}, {"+15550102030", true},
		{"555-0102-030", false}, {"+123 555 010 2030", false}, {"555 010 203", false},
		{"phone", false}, {"555_010_2030", false}, {"+1  555 010 2030", false},
	} {
		r := a.Do("POST", "/public/v1/contact", key, map[string]any{"email": fmt.Sprintf("p%d@example.com", i), "phone": tc.phone})
		if (r.Status == 200) != tc.ok {
			t.Errorf("phone %q: %d %s", tc.phone, r.Status, r.Body)
		}
	}
}

func manyTags(n int) []string {
	tags := make([]string, n)
	for i := range tags {
		tags[i] = fmt.Sprintf("tag-%d", i)
	}
	return tags
}

func TestGetContact(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	c := createContact(t, a, key, map[string]any{"email": "Get.Me@example.com"}).Contact
	other := createContact(t, a, key, map[string]any{"email": "other@example.com"}).Contact
	tests := []struct {
		name, query string
		status      int
		code        api.ErrorCode
	}{
		{"by id", "contactId=" + c.ContactId, 200, ""},
		{"by email, any case", "emailId=GET.me%40EXAMPLE.com", 200, ""},
		{"by both", "contactId=" + c.ContactId + "&emailId=get.me%40example.com", 200, ""},
		{"both naming different contacts", "contactId=" + other.ContactId + "&emailId=get.me%40example.com", 404, api.ErrorCodeContactDoesNotExist},
		{"neither", "", 400, api.ErrorCodeInvalidRequest},
		{"unknown id", "contactId=01939d3c-0000-7000-8000-000000000000", 404, api.ErrorCodeContactDoesNotExist},
		{"malformed id", "contactId=not-a-uuid", 404, api.ErrorCodeContactDoesNotExist},
		{"unknown email", "emailId=nobody%40example.com", 404, api.ErrorCodeContactDoesNotExist},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := a.Do("GET", "/public/v1/contact?"+tc.query, key, nil)
			if r.Status != tc.status {
				t.Fatalf("got %d %s, want %d", r.Status, r.Body, tc.status)
			}
			if tc.status == 200 {
				var got api.Contact
				r.JSON(t, &got)
				if got.ContactId != c.ContactId {
					t.Errorf("got contact %s, want %s", got.ContactId, c.ContactId)
				}
			} else if e := r.Error(t); e.Code != tc.code {
				t.Errorf("code %s, want %s", e.Code, tc.code)
			}
		})
	}
}

// TestConcurrentReadsGetTheirOwnContact: concurrent reads go to PostgreSQL in groups; each
// gets the contact it asked for (or 404), by id and by email alike.
func TestConcurrentReadsGetTheirOwnContact(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	_, otherKey := a.Account("other")
	const contacts = 12
	ids := make([]string, contacts)
	for i := range contacts {
		ids[i] = createContact(t, a, key, map[string]any{"email": fmt.Sprintf("reader%d@example.com", i), "name": fmt.Sprint("reader ", i)}).Contact.ContactId
	}
	var wg sync.WaitGroup
	for round := range 4 {
		for i := range contacts + 2 {
			wg.Go(func() {
				var path, want, k string
				k, want = key, fmt.Sprint("reader ", i)
				switch {
				case i == contacts: // no such contact
					path, want = "/public/v1/contact?contactId=01a1fdd2-97b9-7ebf-99d7-04260c1993e2", ""
				case i == contacts+1: // another account's contact
					path, k, want = "/public/v1/contact?contactId="+ids[round], otherKey, ""
				case (i+round)%2 == 0:
					path = "/public/v1/contact?contactId=" + ids[i]
				default:
					path = fmt.Sprintf("/public/v1/contact?emailId=READER%d@example.com", i)
				}
				r := a.Do("GET", path, k, nil)
				if want == "" {
					if r.Status != 404 {
						t.Errorf("%s: %d %s, want 404", path, r.Status, r.Body)
					}
					return
				}
				var got api.Contact
				if r.Status != 200 {
					t.Errorf("%s: %d %s", path, r.Status, r.Body)
					return
				}
				r.JSON(t, &got)
				if got.ContactId != ids[i] || got.Name == nil || *got.Name != want {
					t.Errorf("%s: got contact %s %v, want %s %q", path, got.ContactId, got.Name, ids[i], want)
				}
			})
		}
	}
	wg.Wait()
}
