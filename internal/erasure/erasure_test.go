package erasure_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apicore"
	"github.com/contactd/contactd/internal/auth"
	"github.com/contactd/contactd/internal/importer"
	"github.com/contactd/contactd/internal/suppression"
	"github.com/contactd/contactd/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// person is someone written into contactd with values found nowhere else, so that any copy
// of them left in the database or the logs is found.
type person struct {
	email, name, renamed, phone, phoneDigits, street, street2 string
	// a duplicate of them, imported from a file and merged into them
	dupEmail, dupName, dupPhone, dupPhoneDigits string
	// their values of the account's custom fields: a unique member number, a work email
	member, workEmail string
}

func newPerson(tag string) person {
	u := strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	n, m := fmt.Sprintf("%04d", uuid.New().ID()%10000), fmt.Sprintf("%04d", uuid.New().ID()%10000)
	return person{
		email: "zq." + tag + u + "@example.com", name: "Zebulon " + tag + "Quixote" + u, renamed: "Xavierre " + tag + "Ulloa" + u,
		phone: "+1 (555) 013-" + n, phoneDigits: "555013" + n,
		street: "Qwyx" + tag + u + " St", street2: "Vrell" + tag + u + " Ave",
		dupEmail: "zq.dup" + tag + u + "@example.com", dupName: "Zeb " + tag + "Quix" + u,
		dupPhone: "+1 (555) 014-" + m, dupPhoneDigits: "555014" + m,
		member: "M-" + tag + u + "-77", workEmail: "zq.work" + tag + u + "@corp.example",
	}
}

func (p person) values() []string {
	return []string{p.email, p.name, p.renamed, p.phone, p.street, p.street2, p.dupEmail, p.dupName, p.dupPhone, p.member, p.workEmail}
}

// The proof that an erasure reaches every copy: a person goes through every path contactd
// has (create, tags, PATCH, activity, a property, enrichment, deliveries whose receiver echoes
// them, Idempotency-Key writes, the export, the console, a duplicate imported from a file,
// written with a key and merged into them), beside a bystander in the same
// account. Before the erasure every text, json and bytea column of every table (and the stored
// responses, opened) holds the person's values; after it none does, nor does the log, while
// the bystander's are all still there. Then the person is kept out: their email or phone is
// refused by every path that creates or changes a contact. In live data and in the sandbox.
func TestErasureLeavesNoTrace(t *testing.T) {
	for _, mode := range []string{"live", "sandbox"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			a := testkit.NewAPI(t, testkit.LocalDelivery)
			account, key := a.Account("acme")
			if mode == "sandbox" {
				k, err := a.Svc.Auth.CreateKeyWith(context.Background(), account, auth.KeyOptions{Name: "test", Test: true})
				if err != nil {
					t.Fatal(err)
				}
				key = k
			}
			a.StartWorkers()
			p, bystander := newPerson("p"), newPerson("b")
			a.DNS.SetMX("example.com", "mx.example.com")
			rc := testkit.NewReceiver(t)
			// a receiver that echoes what it got (the contact's email and the event's details):
			// the start of its answers is kept in the delivery log
			rc.Respond = func(n int, w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusOK)
				fmt.Fprint(w, echo(t, r))
			}
			for _, typ := range []string{"TagsAdded", "TagsRemoved", "ContactDetailsUpdated", "FormSubmission", "ContactEnriched", "ContactErased"} {
				if r := a.Do("POST", "/public/v1/webhooks", key, map[string]any{"url": rc.URL, "eventType": typ}); r.Status != 200 {
					t.Fatalf("subscribe %s: %d %s", typ, r.Status, r.Body)
				}
			}
			actsIn := account
			if mode == "sandbox" {
				sandbox, _, err := a.Svc.Auth.Sandbox(context.Background(), account)
				if err != nil {
					t.Fatal(err)
				}
				actsIn = sandbox
			}
			for _, f := range []map[string]any{{"key": "member", "label": "Member", "type": "text", "unique": true},
				{"key": "work_email", "label": "Work email", "type": "email", "unique": true}} {
				if r := a.Do("POST", "/public/v1/fields", key, f); r.Status != 200 {
					t.Fatalf("define %v: %d %s", f["key"], r.Status, r.Body)
				}
			}
			id, dupID := live(t, a, key, actsIn, p, "p")
			live(t, a, key, actsIn, bystander, "b")
			a.DeliveriesSettled(t)
			testkit.Eventually(t, "every contact enriched", func() bool {
				return a.Count(t, `SELECT count(*) FROM contacts WHERE enrich_due_at IS NOT NULL`) == 0 &&
					a.Count(t, `SELECT count(*) FROM webhook_events WHERE event_type = 'ContactEnriched'`) >= 2
			})
			a.DeliveriesSettled(t)
			for _, v := range append(p.values(), bystander.values()...) {
				if where := traces(t, a, v); len(where) == 0 {
					t.Fatalf("%q is nowhere before the erasure: the search cannot find what it looks for", v)
				}
			}
			events := a.Count(t, `SELECT count(*) FROM webhook_events WHERE contact_id IN ($1, $2)`, id, dupID)

			r := a.Do("POST", "/public/v1/contact/"+id+"/erase", key, nil, "Idempotency-Key", "erase-"+mode)
			var erased struct {
				ErasureID      string   `json:"erasureId"`
				ContactID      string   `json:"contactId"`
				Suppressed     []string `json:"suppressed"`
				EventsRedacted int      `json:"eventsRedacted"`
			}
			r.JSON(t, &erased)
			if r.Status != 200 || erased.ContactID != id || strings.Join(erased.Suppressed, ",") != "email,phone" || erased.EventsRedacted != events {
				t.Fatalf("erase: %d %s (%d events about the contact and its merged duplicate)", r.Status, r.Body, events)
			}
			for _, v := range p.values() {
				for _, where := range traces(t, a, v) {
					t.Errorf("%q is still in %s", v, where)
				}
				if strings.Contains(strings.ToLower(a.Logs.String()), strings.ToLower(v)) {
					t.Errorf("%q is in the log", v)
				}
			}
			for _, v := range bystander.values() {
				if len(traces(t, a, v)) == 0 {
					t.Errorf("the bystander's %q went with the erasure", v)
				}
			}
			// the stored answer of a keyed write that names the contact in its path alone (tags
			// answer {tags}) went too: its retry runs again, on a contact that is gone
			if r := a.Do("POST", "/public/v1/contact/"+id+"/tags", key, map[string]any{"tags": []string{"vip"}}, "Idempotency-Key", "p-0"); r.Status != http.StatusNotFound ||
				r.Header.Get("Idempotent-Replayed") != "" {
				t.Errorf("a retry of the erased contact's keyed tag write: %d (replayed %q), want 404, not its stored answer", r.Status, r.Header.Get("Idempotent-Replayed"))
			}
			keptOut(t, a, key, p, id, erased.ErasureID, rc)
			if r := a.Do("GET", "/public/v1/contact?contactId="+dupID, key, nil); r.Status != 404 {
				t.Errorf("GET the merged duplicate after the erasure: %d %s", r.Status, r.Body)
			}
		})
	}
}

// echo is what a receiver that repeats what it got answers to a delivery.
func echo(t *testing.T, r *http.Request) string {
	body, _ := io.ReadAll(r.Body)
	var payload struct {
		Events []struct {
			Data map[string]json.RawMessage `json:"data"`
		} `json:"events"`
	}
	if err := json.Unmarshal(body, &payload); err != nil || len(payload.Events) == 0 {
		t.Errorf("a delivery: %v %s", err, body)
		return "?"
	}
	var who struct {
		EmailID string `json:"emailId"`
	}
	out := "got"
	for k, v := range payload.Events[0].Data {
		if k == "contactInfo" {
			_ = json.Unmarshal(v, &who)
			continue
		}
		out += " " + string(v)
	}
	return who.EmailID + " " + out
}

// live drives p through every path in the account key acts in, and returns its contact id
// and its merged duplicate's.
func live(t *testing.T, a *testkit.API, key string, account uuid.UUID, p person, tag string) (id, dupID string) {
	t.Helper()
	r := a.Do("POST", "/public/v1/contact", key, map[string]any{"email": p.email, "name": p.name, "phone": p.phone,
		"tags": []string{"lead"}, "address": "12 " + p.street + " Apt 9, Springfield, IL 62704",
		"crmFields": map[string]any{"name": "Salesforce", "stage": "New"}, "customFields": map[string]any{"member": p.member}},
		"Idempotency-Key", "create-"+tag)
	var created struct {
		Contact struct {
			ContactID string `json:"contactId"`
		} `json:"contact"`
	}
	r.JSON(t, &created)
	id = created.Contact.ContactID
	if r.Status != 200 || id == "" {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	steps := []struct {
		method, path string
		body         any
	}{
		{"POST", "/tags", map[string]any{"tags": []string{"vip"}}},
		{"PATCH", "", map[string]any{"name": p.renamed, "customFields": map[string]any{"work_email": p.workEmail}}},
		{"POST", "/activity", map[string]any{"type": "FormSubmission", "details": map[string]any{"said": "I am " + p.renamed}}},
		{"POST", "/property", map[string]any{"address": "7 " + p.street2 + ", Springfield, IL 62701"}},
		{"PUT", "/tags", map[string]any{"tags": []string{"customer"}}},
	}
	for i, s := range steps {
		if r := a.Do(s.method, "/public/v1/contact/"+id+s.path, key, s.body, "Idempotency-Key", fmt.Sprintf("%s-%d", tag, i)); r.Status != 200 {
			t.Fatalf("%s %s: %d %s", s.method, s.path, r.Status, r.Body)
		}
	}
	dupID = importedDuplicate(t, a, key, account, p, tag)
	if r := a.Do("POST", "/public/v1/contacts/merge", key, map[string]any{"primaryContactId": id, "duplicateContactIds": []string{dupID}},
		"Idempotency-Key", "merge-"+tag); r.Status != 200 || !strings.Contains(string(r.Body), p.renamed) {
		t.Fatalf("merge: %d %s", r.Status, r.Body)
	}
	if r := a.Do("GET", "/public/v1/contacts/export", key, nil); r.Status != 200 || !strings.Contains(string(r.Body), p.email) {
		t.Fatalf("export: %d, has the email: %v", r.Status, strings.Contains(string(r.Body), p.email))
	}
	if page := consolePage(t, a, key, "/console/contacts/"+id); !strings.Contains(page, p.renamed) {
		t.Fatalf("the console's page of the contact does not show its name")
	}
	return id, dupID
}

// importedDuplicate imports a duplicate of p (another email and phone) from a CSV file, as
// `contactd import` does, and writes it once with an Idempotency-Key, whose stored answer
// names it; it returns its id.
func importedDuplicate(t *testing.T, a *testkit.API, key string, account uuid.UUID, p person, tag string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "people.csv")
	if err := os.WriteFile(file, []byte("Email,Name,Phone\n"+p.dupEmail+","+p.dupName+","+p.dupPhone+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	batch, err := apicore.NewBatch(a.Svc.Contacts)
	if err != nil {
		t.Fatal(err)
	}
	if sum, err := importer.Run(context.Background(), a.Store, batch, importer.Options{Account: account, File: file}); err != nil || sum.Created != 1 {
		t.Fatalf("import: %v, %v", sum, err)
	}
	var found struct {
		ContactID string `json:"contactId"`
	}
	if r := a.Do("GET", "/public/v1/contact?emailId="+url.QueryEscape(p.dupEmail), key, nil); r.Status != 200 {
		t.Fatalf("the imported duplicate: %d %s", r.Status, r.Body)
	} else {
		r.JSON(t, &found)
	}
	if r := a.Do("PATCH", "/public/v1/contact/"+found.ContactID, key, map[string]any{"assignedUserEmailId": "agent@example.com"},
		"Idempotency-Key", "dup-"+tag); r.Status != 200 || !strings.Contains(string(r.Body), p.dupName) {
		t.Fatalf("a keyed write to the imported duplicate: %d %s", r.Status, r.Body)
	}
	return found.ContactID
}

// consolePage signs in to the console with key and returns the page at path.
func consolePage(t *testing.T, a *testkit.API, key, path string) string {
	t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.PostForm(a.URL+"/console/login", url.Values{"key": {key}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) == 0 {
		t.Fatalf("console sign-in: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest("GET", a.URL+path, nil)
	for _, c := range resp.Cookies() {
		req.AddCookie(c)
	}
	page, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer page.Body.Close()
	b, _ := io.ReadAll(page.Body)
	if page.StatusCode != 200 || page.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("console %s: %d, Cache-Control %q", path, page.StatusCode, page.Header.Get("Cache-Control"))
	}
	return string(b)
}

// traces lists where v is in the database: every text, json and bytea column of every table
// (arrays and json as text, case-insensitively), and the stored Idempotency-Key responses,
// which are sealed, opened.
func traces(t *testing.T, a *testkit.API, v string) []string {
	t.Helper()
	ctx := context.Background()
	rows, _ := a.Store.Pool.Query(ctx, `SELECT table_name, column_name, data_type FROM information_schema.columns
		WHERE table_schema = 'public' AND (data_type IN ('text', 'character varying', 'json', 'jsonb', 'bytea', 'ARRAY', 'tsvector'))
		ORDER BY 1, 2`)
	type column struct{ table, name, kind string }
	var columns []column
	for rows.Next() {
		var c column
		if err := rows.Scan(&c.table, &c.name, &c.kind); err != nil {
			t.Fatal(err)
		}
		columns = append(columns, c)
	}
	if err := rows.Err(); err != nil || len(columns) < 40 {
		t.Fatalf("the columns to search: %d, %v", len(columns), err)
	}
	var where []string
	for _, c := range columns {
		cond := fmt.Sprintf("%q::text ILIKE '%%' || $1 || '%%'", c.name)
		if c.kind == "bytea" {
			cond = fmt.Sprintf("position(convert_to($1, 'UTF8') in %q) > 0", c.name)
		}
		if n := a.Count(t, fmt.Sprintf("SELECT count(*) FROM %q WHERE %s", c.table, cond), v); n > 0 {
			where = append(where, fmt.Sprintf("%s.%s (%d rows)", c.table, c.name, n))
		}
	}
	for key, body := range storedResponses(t, a) {
		if strings.Contains(strings.ToLower(body), strings.ToLower(v)) {
			where = append(where, "the stored response of Idempotency-Key "+key)
		}
	}
	return where
}

// storedResponses are the stored Idempotency-Key responses of every account, opened.
func storedResponses(t *testing.T, a *testkit.API) map[string]string {
	t.Helper()
	keys, err := testkit.SecretKeys(a.Cfg)
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := a.Store.Pool.Query(context.Background(), `SELECT account_id::text, key, body FROM idempotency_keys`)
	out := map[string]string{}
	for rows.Next() {
		var account, key string
		var body []byte
		if err := rows.Scan(&account, &key, &body); err != nil {
			t.Fatal(err)
		}
		opened, err := keys.Open(string(body), "idempotency_keys.body/"+account+"/"+key)
		if err != nil {
			t.Fatalf("stored response %s: %v", key, err)
		}
		out[key] = string(opened)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// keptOut checks the erased contact is gone and stays out: it is not found, its events are
// tombstones, ContactErased reached its subscriber, and its email and phone are refused by
// every path that makes or changes a contact.
func keptOut(t *testing.T, a *testkit.API, key string, p person, id, erasureID string, rc *testkit.Receiver) {
	t.Helper()
	for _, q := range []string{"contactId=" + id, "emailId=" + url.QueryEscape(p.email)} {
		if r := a.Do("GET", "/public/v1/contact?"+q, key, nil); r.Status != 404 || r.Error(t).Code != "ContactDoesNotExist" {
			t.Errorf("GET contact?%s after the erasure: %d %s", q, r.Status, r.Body)
		}
	}
	if r := a.Do("POST", "/public/v1/contact/"+id+"/erase", key, nil); r.Status != 404 {
		t.Errorf("a second erasure: %d %s", r.Status, r.Body)
	}
	var feed struct {
		Events []struct {
			EventID   string          `json:"eventId"`
			EventType string          `json:"eventType"`
			Redacted  bool            `json:"redacted"`
			Data      json.RawMessage `json:"data"`
		} `json:"events"`
	}
	a.Do("GET", "/public/v1/events?limit=1000", key, nil).JSON(t, &feed)
	tombstones, erasures := 0, 0
	for _, e := range feed.Events {
		if !strings.Contains(string(e.Data), id) {
			continue
		}
		switch {
		case e.EventType == "ContactErased":
			erasures++
			if e.Redacted || !strings.Contains(string(e.Data), erasureID) {
				t.Errorf("ContactErased in the feed: %s", e.Data)
			}
		case e.Redacted:
			tombstones++
		default:
			t.Errorf("an event about the erased contact is not a tombstone: %s %s", e.EventType, e.Data)
		}
	}
	if tombstones == 0 || erasures != 1 {
		t.Errorf("the feed has %d tombstones and %d ContactErased events about the contact", tombstones, erasures)
	}
	a.DeliveriesSettled(t)
	got := 0
	for len(rc.Got) > 0 {
		if d := rc.Next(t); strings.Contains(string(d.Body), `"ContactErased"`) && strings.Contains(string(d.Body), erasureID) {
			got++
		}
	}
	if got != 1 {
		t.Errorf("ContactErased delivered %d times", got)
	}

	refused := func(what string, r *testkit.Response) {
		t.Helper()
		if r.Status != 409 || r.Error(t).Code != "ContactSuppressed" {
			t.Errorf("%s: %d %s, want 409 ContactSuppressed", what, r.Status, r.Body)
		}
	}
	refused("create with the email (another case)", a.Do("POST", "/public/v1/contact", key, map[string]any{"email": strings.ToUpper(p.email)}))
	refused("create with the phone", a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "fresh@example.com", "phone": "555.013." + p.phoneDigits[6:]}))
	refused("create with the merged duplicate's email", a.Do("POST", "/public/v1/contact", key, map[string]any{"email": p.dupEmail}))
	refused("create with the merged duplicate's phone", a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "fresh2@example.com", "phone": p.dupPhone}))
	var other struct {
		Contact struct {
			ContactID string `json:"contactId"`
		} `json:"contact"`
	}
	a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "other@example.com"}).JSON(t, &other)
	refused("PATCH to the email", a.Do("PATCH", "/public/v1/contact/"+other.Contact.ContactID, key, map[string]any{"email": p.email}))
	refused("PATCH to the phone", a.Do("PATCH", "/public/v1/contact/"+other.Contact.ContactID, key, map[string]any{"phone": p.phone}))
	// the person's unique work email field is theirs too: kept out as a primary email, and as
	// the field's value on a create, a PATCH and a batch upsert
	refused("create with the work email", a.Do("POST", "/public/v1/contact", key, map[string]any{"email": strings.ToUpper(p.workEmail)}))
	refused("create with the work email in its field", a.Do("POST", "/public/v1/contact", key,
		map[string]any{"email": "fresh3@example.com", "customFields": map[string]any{"work_email": p.workEmail}}))
	refused("PATCH to the work email in its field", a.Do("PATCH", "/public/v1/contact/"+other.Contact.ContactID, key,
		map[string]any{"customFields": map[string]any{"work_email": strings.ToUpper(p.workEmail)}}))
	if r := a.Do("POST", "/public/v1/contacts/batch", key, map[string]any{"mode": "upsert", "contacts": []any{
		map[string]any{"email": "other@example.com", "customFields": map[string]any{"work_email": p.workEmail}}}}); !strings.Contains(string(r.Body), "ContactSuppressed") {
		t.Errorf("a batch upsert giving a contact the work email: %d %s", r.Status, r.Body)
	}
	for _, mode := range []string{"create", "upsert"} {
		var results struct {
			Results []struct {
				Status string `json:"status"`
				Error  *struct {
					Code string `json:"code"`
				} `json:"error"`
			} `json:"results"`
		}
		r := a.Do("POST", "/public/v1/contacts/batch", key, map[string]any{"mode": mode, "contacts": []any{
			map[string]any{"email": p.email}, map[string]any{"email": "new-" + mode + "@example.com", "phone": p.phone},
			map[string]any{"email": "other@example.com", "phone": p.phone}, map[string]any{"email": "ok-" + mode + "@example.com"}}})
		r.JSON(t, &results)
		want := []string{"ContactSuppressed", "ContactSuppressed", "DuplicateContact", ""}
		if mode == "upsert" {
			want[2] = "ContactSuppressed" // the existing contact would take on the phone
		}
		for i, w := range want {
			got := ""
			if i < len(results.Results) && results.Results[i].Error != nil {
				got = results.Results[i].Error.Code
			}
			if r.Status != 200 || got != w {
				t.Errorf("batch (%s) item %d: %q, want %q: %s", mode, i, got, w, r.Body)
			}
		}
	}
}

// An erased person is kept out under every spelling of their email and phone: the email as
// its provider reads it (dots, +tags and case at Gmail, a +tag at Outlook), the phone in
// E.164 (its punctuation, and its country written or not); a neighbour's values pass. An
// entry the list made before these forms (the spelling alone) keeps refusing that spelling.
// `contactd suppressions remove` lifts every form (internal/app's test).
func TestSuppressionKnowsThePersonNotTheSpelling(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	account, key := a.Account("acme")
	var created api.CreateContactResult
	a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "Jane.Roe@gmail.com", "phone": "+1 (555) 010-2030"}).JSON(t, &created)
	if r := a.Do("POST", "/public/v1/contact/"+created.Contact.ContactId+"/erase", key, nil); r.Status != 200 {
		t.Fatalf("erase: %d %s", r.Status, r.Body)
	}
	create := func(email, phone string) int {
		body := map[string]any{"email": email}
		if phone != "" {
			body["phone"] = phone
		}
		return a.Do("POST", "/public/v1/contact", key, body).Status
	}
	for _, email := range []string{"jane.roe@gmail.com", "janeroe@gmail.com", "Jane.Roe+news@gmail.com", "J.A.N.E.R.O.E@googlemail.com"} {
		if st := create(email, ""); st != 409 {
			t.Errorf("%s: %d, want 409 ContactSuppressed", email, st)
		}
	}
	for _, phone := range []string{"555-010-2030", "555.010.2030", "+1 555 010 2030", "+01 (555) 010-2030"} {
		if st := create("someone-else@example.com", phone); st != 409 {
			t.Errorf("phone %s: %d, want 409 ContactSuppressed", phone, st)
		}
	}
	for email, phone := range map[string]string{"jane.roe2@gmail.com": "", "other1@example.com": "555-010-2031", "other2@example.com": "+44 555 010 2030"} {
		if st := create(email, phone); st != 200 {
			t.Errorf("a neighbour %s %s: %d, want 200", email, phone, st)
		}
	}
	// an entry of the list from before: the spelling's digest alone (of the erasure above: every
	// erasure's suppression names a journalled one)
	var erasure uuid.UUID
	if err := a.Store.Pool.QueryRow(context.Background(), "SELECT erasure_id FROM erasures").Scan(&erasure); err != nil {
		t.Fatal(err)
	}
	entries, err := a.Svc.Suppressions.Entries(context.Background(), account, "old.spelling@outlook.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Store.Do(context.Background(), func(q *db.Queries) error {
		_, err := suppression.Add(context.Background(), q, account, erasure, entries[:1], time.Now())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if st := create("Old.Spelling@outlook.com", ""); st != 409 {
		t.Errorf("the spelling an old entry holds: %d, want 409", st)
	}
}

// Erase works on any id the account ever had, and every value of the person its events carried
// (current and previous) is redacted and suppressed: a contact deleted after a tag and a PATCH
// of its name, email and phone; a merge primary deleted after the merge, whose duplicates' ids
// no longer resolve (their events erased through the primary's ContactsMerged); a merged
// duplicate's id, which erases the person it was merged into; a live contact whose email
// changed. Erasing again finds nothing left: 404.
func TestEraseAnyIDTheAccountEverHad(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	create := func(email string, body map[string]any) string {
		t.Helper()
		if body == nil {
			body = map[string]any{}
		}
		body["email"] = email
		var c api.CreateContactResult
		if r := a.Do("POST", "/public/v1/contact", key, body); r.Status != 200 {
			t.Fatalf("create %s: %d %s", email, r.Status, r.Body)
		} else {
			r.JSON(t, &c)
		}
		return c.Contact.ContactId
	}
	do := func(method, path string, body any, want int) {
		t.Helper()
		if r := a.Do(method, path, key, body); r.Status != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, r.Status, r.Body, want)
		}
	}
	// nothing of these values may be left in any event of the account, nor accepted again
	gone := func(what string, values ...string) {
		t.Helper()
		var feed struct {
			Events []json.RawMessage `json:"events"`
		}
		a.Do("GET", "/public/v1/events?limit=1000", key, nil).JSON(t, &feed)
		for _, ev := range feed.Events {
			for _, v := range values {
				if strings.Contains(strings.ToLower(string(ev)), strings.ToLower(v)) {
					t.Errorf("%s: an event still carries %q: %s", what, v, ev)
				}
			}
		}
	}
	refused := func(what string, body map[string]any) {
		t.Helper()
		if r := a.Do("POST", "/public/v1/contact", key, body); r.Status != 409 || r.Error(t).Code != "ContactSuppressed" {
			t.Errorf("%s: %d %s, want 409 ContactSuppressed", what, r.Status, r.Body)
		}
	}

	// deleted after a tag and a PATCH
	id := create("gone.person@example.org", map[string]any{"name": "Gone Person", "phone": "555-010-4040"})
	do("POST", "/public/v1/contact/"+id+"/tags", map[string]any{"tags": []string{"vip"}}, 200)
	do("PATCH", "/public/v1/contact/"+id, map[string]any{"name": "Renamed Person", "email": "moved.person@example.org", "phone": "555-010-4041"}, 200)
	do("DELETE", "/public/v1/contact/"+id, nil, 204)
	do("POST", "/public/v1/contact/"+id+"/erase", nil, 200)
	gone("a deleted contact", "gone.person@example.org", "moved.person@example.org", "Gone Person", "Renamed Person", "010-4040", "010-4041")
	refused("the deleted contact's first email", map[string]any{"email": "gone.person@example.org"})
	refused("its email after the PATCH", map[string]any{"email": "moved.person@example.org"})
	refused("its first phone", map[string]any{"email": "fresh1@example.org", "phone": "(555) 010-4040"})
	do("POST", "/public/v1/contact/"+id+"/erase", nil, 404)

	// a merge primary deleted: its duplicates' ids resolve no more
	primary := create("primary.person@example.org", nil)
	dup := create("dup.person@gmail.com", map[string]any{"phone": "555-010-5050"})
	do("POST", "/public/v1/contact/"+dup+"/tags", map[string]any{"tags": []string{"dup-tag"}}, 200)
	do("POST", "/public/v1/contacts/merge", map[string]any{"primaryContactId": primary, "duplicateContactIds": []string{dup}}, 200)
	do("DELETE", "/public/v1/contact/"+primary, nil, 204)
	do("POST", "/public/v1/contact/"+primary+"/erase", nil, 200)
	gone("a deleted merge primary", "primary.person@example.org", "dup.person@gmail.com", "010-5050")
	refused("the merged duplicate's email, spelled otherwise", map[string]any{"email": "Dup.Person+x@gmail.com"})
	refused("the merged duplicate's phone", map[string]any{"email": "fresh2@example.org", "phone": "555.010.5050"})

	// a merged duplicate's id erases the person it went into
	primary = create("second.primary@example.org", nil)
	dup = create("second.dup@example.org", nil)
	do("POST", "/public/v1/contacts/merge", map[string]any{"primaryContactId": primary, "duplicateContactIds": []string{dup}}, 200)
	var erased struct {
		ContactID string `json:"contactId"`
	}
	if r := a.Do("POST", "/public/v1/contact/"+dup+"/erase", key, nil); r.Status != 200 {
		t.Fatalf("erase by a merged duplicate's id: %d %s", r.Status, r.Body)
	} else if r.JSON(t, &erased); erased.ContactID != primary {
		t.Errorf("erased %s, want the primary %s", erased.ContactID, primary)
	}
	do("GET", "/public/v1/contact?contactId="+primary, nil, 404)
	refused("the primary's email", map[string]any{"email": "second.primary@example.org"})
	refused("the duplicate's email", map[string]any{"email": "second.dup@example.org"})

	// live, its email changed: the old one is the person's too
	live := create("before.change@example.org", nil)
	do("PATCH", "/public/v1/contact/"+live, map[string]any{"email": "after.change@example.org"}, 200)
	do("POST", "/public/v1/contact/"+live+"/erase", nil, 200)
	gone("a live contact with a changed email", "before.change@example.org", "after.change@example.org")
	refused("its email before the change", map[string]any{"email": "before.change@example.org"})

	do("POST", "/public/v1/contact/"+uuid.NewString()+"/erase", nil, 404)
}
