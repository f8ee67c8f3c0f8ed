package httpapi_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/config"
	"github.com/contactd/contactd/internal/testkit"
)

func batch(t *testing.T, a *testkit.API, key, mode string, items ...any) []api.BatchContactItemResult {
	t.Helper()
	r := a.Do("POST", "/public/v1/contacts/batch", key, map[string]any{"mode": mode, "contacts": items})
	if r.Status != 200 {
		t.Fatalf("batch: %d %s", r.Status, r.Body)
	}
	var out api.BatchContactsResult
	r.JSON(t, &out)
	if len(out.Results) != len(items) {
		t.Fatalf("%d results for %d items", len(out.Results), len(items))
	}
	return out.Results
}

// eventsOf lists the event types of a contact in the order they happened (from the table:
// the feed holds back events while any transaction of the test cluster is running).
func eventsOf(t *testing.T, a *testkit.API, contactID string) []string {
	t.Helper()
	rows, _ := testkit.Pool(a.Store).Query(context.Background(),
		"SELECT event_type FROM webhook_events WHERE contact_id = $1 ORDER BY event_id", contactID)
	types, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return types
}

func TestBatchCreate(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	existing := createContact(t, a, key, map[string]any{"email": "old@example.com"}).Contact.ContactId
	res := batch(t, a, key, "create",
		map[string]any{"email": "new@example.com", "name": "New", "tags": []string{"lead", "LEAD", "vip"},
			"address": "123 N Main St Apt 4, Springfield, IL 62704"},
		map[string]any{"email": "not an email", "tags": "x", "color": "red"},
		map[string]any{"email": "OLD@example.com", "tags": []string{"a"}},
		map[string]any{"email": "bad-address@example.com", "address": "nowhere at all"},
		map[string]any{"email": "tags@example.com", "tags": []string{strings.Repeat("t", 300)}},
		map[string]any{"email": "plain@example.com", "address": "500 E Capitol Ave, Springfield, IL 62701"},
	)
	if res[0].Status != "created" || res[0].ContactId == nil || len(*res[0].Warnings) != 0 {
		t.Errorf("new: %+v", res[0])
	}
	if res[1].Status != "failed" || res[1].Error == nil || res[1].Error.Code != "InvalidRequest" {
		t.Fatalf("invalid: %+v", res[1])
	}
	var fields []string
	for _, f := range *res[1].Error.Data.Errors {
		fields = append(fields, f.Field)
	}
	slices.Sort(fields)
	if strings.Join(fields, " ") != "body.contacts.1.color body.contacts.1.email body.contacts.1.tags" {
		t.Errorf("invalid item's fields: %v", fields)
	}
	if res[2].Status != "failed" || res[2].Error.Code != "DuplicateContact" || *res[2].Error.Data.ContactId != existing {
		t.Errorf("duplicate: %+v", res[2])
	}
	if res[3].Status != "created" || (*res[3].Warnings)[0] != "InvalidInputAddress" {
		t.Errorf("unparsed address: %+v", res[3])
	}
	if res[4].Status != "failed" || res[4].Error.Code != "InvalidRequest" || (*res[4].Error.Data.Errors)[0].Field != "body.contacts.4.tags.0" {
		t.Errorf("too long a tag: %+v", res[4])
	}

	var c api.Contact
	a.Do("GET", "/public/v1/contact?contactId="+res[5].ContactId.String(), key, nil).JSON(t, &c)
	if res[5].Status != "created" || len(c.Properties) != 1 || c.Properties[0].Address.StreetAddress != "500 E Capitol Ave" ||
		c.Properties[0].Address.AptOrUnitNumber != "" {
		t.Errorf("an address without a unit: %+v %+v", res[5], c.Properties)
	}
	a.Do("GET", "/public/v1/contact?contactId="+res[0].ContactId.String(), key, nil).JSON(t, &c)
	if c.Email != "new@example.com" || *c.Name != "New" || strings.Join(c.Tags, ",") != "lead,vip" ||
		len(c.Properties) != 1 || c.Properties[0].Address.City != "Springfield" {
		t.Errorf("created contact: %+v", c)
	}
	if got := eventsOf(t, a, res[0].ContactId.String()); strings.Join(got, ",") != "TagsAdded" {
		t.Errorf("events of the created contact: %v", got)
	}
	if got := eventsOf(t, a, existing); len(got) != 0 {
		t.Errorf("the duplicate emitted %v", got)
	}
}

func TestBatchUpsert(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	id := createContact(t, a, key, map[string]any{"email": "jane@example.com", "name": "Jane", "phone": "555-010-0100",
		"tags": []string{"lead"}, "crmFields": map[string]any{"name": "Salesforce", "stage": "New"}}).Contact.ContactId

	res := batch(t, a, key, "upsert",
		map[string]any{"email": "JANE@example.com", "name": "Jane Doe", "tags": []string{"Lead", "vip"},
			"crmFields": map[string]any{"stage": "Won"}, "address": "500 E Capitol Ave, Springfield, IL 62701"},
		map[string]any{"email": "sam@example.com", "tags": []string{"x"}},
		map[string]any{"email": "sam@example.com", "tags": []string{"y"}, "name": "Sam"},
	)
	if res[0].Status != "updated" || res[0].ContactId.String() != id {
		t.Errorf("existing: %+v", res[0])
	}
	if res[1].Status != "created" || res[2].Status != "updated" || *res[1].ContactId != *res[2].ContactId {
		t.Errorf("an email twice in the batch: %+v then %+v", res[1], res[2])
	}
	var c api.Contact
	a.Do("GET", "/public/v1/contact?contactId="+id, key, nil).JSON(t, &c)
	if *c.Name != "Jane Doe" || *c.Phone != "555-010-0100" || strings.Join(c.Tags, ",") != "lead,vip" ||
		*c.CrmFields.Name != "Salesforce" || *c.CrmFields.Stage != "Won" || len(c.Properties) != 1 || c.Email != "jane@example.com" {
		t.Errorf("merged contact: name %v phone %v tags %v crm %+v properties %d email %s",
			*c.Name, *c.Phone, c.Tags, *c.CrmFields, len(c.Properties), c.Email)
	}
	if got := eventsOf(t, a, id); strings.Join(got, ",") != "TagsAdded,ContactDetailsUpdated,TagsAdded" {
		t.Errorf("events of the upserted contact: %v", got)
	}
	a.Do("GET", "/public/v1/contact?contactId="+res[1].ContactId.String(), key, nil).JSON(t, &c)
	if strings.Join(c.Tags, ",") != "x,y" || *c.Name != "Sam" {
		t.Errorf("the email twice: %v %v", c.Tags, *c.Name)
	}

	// the same again changes nothing and emits nothing
	res = batch(t, a, key, "upsert",
		map[string]any{"email": "jane@example.com", "name": "Jane Doe", "tags": []string{"vip"},
			"address": "500 E Capitol Ave, Springfield, IL 62701"})
	if res[0].Status != "unchanged" || res[0].ContactId.String() != id {
		t.Errorf("again: %+v", res[0])
	}
	if got := eventsOf(t, a, id); len(got) != 3 {
		t.Errorf("an unchanged upsert emitted: %v", got)
	}
}

// A 1,000-item upsert that changes 10 contacts emits 10 events: an item that leaves its
// contact as it was is written nowhere, whatever its layout (the email's case, tags in another
// order or left out, CRM members left out).
func TestBatchUpsertEmitsOnlyRealChanges(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	account, key := a.Account("acme")
	items := make([]any, 1000)
	item := func(i int) map[string]any {
		return map[string]any{"email": fmt.Sprintf("u%d@example.com", i), "name": fmt.Sprintf("U %d", i),
			"phone": "555-010-0100", "tags": []string{"lead", "vip"}, "assignedUserEmailId": "agent@example.com",
			"crmFields": map[string]any{"name": "Salesforce", "stage": "New", "createdDate": "2026-11-21T09:30:00.123Z"}}
	}
	for i := range items {
		items[i] = item(i)
	}
	for _, r := range batch(t, a, key, "create", items...) {
		if r.Status != "created" {
			t.Fatalf("create: %+v", r)
		}
	}
	countEvents := func() int {
		t.Helper()
		return countRows(t, a, "SELECT count(*) FROM webhook_events WHERE account_id = $1", account)
	}
	before := countEvents()

	changes := map[int]func(m map[string]any){
		3:   func(m map[string]any) { m["name"] = "Renamed" },
		50:  func(m map[string]any) { m["phone"] = "555-010-0199" },
		97:  func(m map[string]any) { m["assignedUserEmailId"] = "other@example.com" },
		150: func(m map[string]any) { m["crmFields"].(map[string]any)["stage"] = "Won" },
		201: func(m map[string]any) { m["crmFields"].(map[string]any)["url"] = "https://crm.example.com/1" },
		333: func(m map[string]any) { m["crmFields"].(map[string]any)["createdDate"] = "2026-11-22T09:30:00.123Z" },
		500: func(m map[string]any) { m["name"] = "Renamed"; m["phone"] = "555-010-0198" },
		640: func(m map[string]any) { m["tags"] = []string{"lead", "vip", "new-tag"} },
		777: func(m map[string]any) { m["tags"] = []string{"another"} },
		999: func(m map[string]any) { m["crmFields"].(map[string]any)["source"] = "Website" },
	}
	for i := range items {
		m := item(i)
		switch {
		case changes[i] != nil:
			changes[i](m)
		case i%3 == 0:
			m["email"] = strings.ToUpper(m["email"].(string))
		case i%3 == 1:
			m["tags"] = []string{"VIP", "lead"}
			delete(m["crmFields"].(map[string]any), "stage")
		default:
			delete(m, "tags")
			delete(m, "crmFields")
		}
		items[i] = m
	}
	var updated []int
	for i, r := range batch(t, a, key, "upsert", items...) {
		if r.Status == "updated" {
			updated = append(updated, i)
		} else if r.Status != "unchanged" {
			t.Errorf("item %d: %+v", i, r)
		}
	}
	if want := []int{3, 50, 97, 150, 201, 333, 500, 640, 777, 999}; !slices.Equal(updated, want) {
		t.Errorf("updated items %v, want %v", updated, want)
	}
	if n := countEvents() - before; n != 10 {
		t.Errorf("the upsert emitted %d events, want 10", n)
	}
}

func TestBatchEnvelope(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	many := make([]any, 1001)
	for i := range many {
		many[i] = map[string]any{"email": fmt.Sprintf("m%d@example.com", i)}
	}
	for name, body := range map[string]any{
		"over 1,000":   map[string]any{"contacts": many},
		"none":         map[string]any{"contacts": []any{}},
		"no contacts":  map[string]any{"mode": "create"},
		"unknown mode": map[string]any{"mode": "merge", "contacts": many[:1]},
		"extra field":  map[string]any{"contacts": many[:1], "dryRun": true},
		"not an array": map[string]any{"contacts": "x"},
	} {
		if r := a.Do("POST", "/public/v1/contacts/batch", key, body); r.Status != 400 || r.Error(t).Code != "InvalidRequest" {
			t.Errorf("%s: %d %s", name, r.Status, r.Body)
		}
	}
	if r := a.Do("POST", "/public/v1/contacts/batch", key, "not json"); r.Status != 400 {
		t.Errorf("not JSON: %d %s", r.Status, r.Body)
	}
	var n int
	if err := testkit.Pool(a.Store).QueryRow(context.Background(), "SELECT count(*) FROM contacts").Scan(&n); err != nil || n != 0 {
		t.Errorf("refused batches wrote %d contacts (%v)", n, err)
	}
	// 1,000 contacts are over the body limit of one contact, not of a batch
	res := batch(t, a, key, "create", many[:1000]...)
	for i, r := range res {
		if r.Status != "created" {
			t.Fatalf("item %d: %+v", i, r)
		}
	}
}

func TestBatchRateLimits(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t, func(c *config.Config) { c.RateWritesPer10s, c.RateAccountPerDay = 5, 100 })
	_, key := a.Account("acme")
	items := make([]any, 7)
	for i := range items {
		items[i] = map[string]any{"email": fmt.Sprintf("r%d@example.com", i)}
	}
	r := a.Do("POST", "/public/v1/contacts/batch", key, map[string]any{"contacts": items})
	if r.Status != 200 || r.Header.Get("X-RateLimit-Remaining-10") != "4" || r.Header.Get("X-RateLimit-Remaining-Day") != "93" {
		t.Errorf("a batch of 7: %d, 10 s remaining %s, day remaining %s", r.Status,
			r.Header.Get("X-RateLimit-Remaining-10"), r.Header.Get("X-RateLimit-Remaining-Day"))
	}
}

// A batch costs its items in the account's day, locally and through the shared limits:
// one that would overshoot what is left is refused whole (429, Retry-After until the next
// UTC day, nothing written, nothing counted), and one that fits takes exactly what is left;
// a second process sharing Redis sees the same day.
func TestABatchOvershootingTheDayIsRefusedWhole(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(map[bool]string{false: "local", true: "redis"}[shared], func(t *testing.T) {
			t.Parallel()
			redisURL := ""
			if shared {
				redisURL = testkit.StartRedis(t).URL
			}
			a := testkit.NewAPI(t, func(c *config.Config) {
				c.RateWritesPer10s, c.RateAccountPerDay, c.RedisURL = 100, 10, redisURL
				c.RedisTimeout = testkit.Patience // a busy machine's slow answer is not a fallback
			})
			_, key := a.Account("acme")
			items := func(prefix string, n int) []any {
				out := make([]any, n)
				for i := range out {
					out[i] = map[string]any{"email": fmt.Sprintf("%s%d@example.com", prefix, i)}
				}
				return out
			}
			send := func(prefix string, n int) *testkit.Response {
				t.Helper()
				return a.Do("POST", "/public/v1/contacts/batch", key, map[string]any{"contacts": items(prefix, n)})
			}
			if r := send("a", 7); r.Status != 200 || r.Header.Get("X-RateLimit-Remaining-Day") != "3" {
				t.Fatalf("a batch of 7 of 10: %d, day remaining %q", r.Status, r.Header.Get("X-RateLimit-Remaining-Day"))
			}
			r := send("b", 4)
			retry, _ := strconv.Atoi(r.Header.Get("Retry-After"))
			if r.Status != 429 || r.Error(t).Code != "TooManyRequests" || retry < 1 || retry > 86400 {
				t.Errorf("a batch of 4 with 3 left: %d %s, Retry-After %d; want 429 until tomorrow", r.Status, r.Body, retry)
			}
			if n := a.Count(t, `SELECT count(*) FROM contacts`); n != 7 {
				t.Errorf("%d contacts after the refused batch, want the first batch's 7", n)
			}
			if shared { // the day is the account's in every process
				if r := a.SecondProcess().Do("POST", "/public/v1/contacts/batch", key, map[string]any{"contacts": items("c", 4)}); r.Status != 429 {
					t.Errorf("a batch of 4 in a second process: %d, want 429", r.Status)
				}
			}
			if r := send("d", 3); r.Status != 200 || r.Header.Get("X-RateLimit-Remaining-Day") != "0" {
				t.Errorf("a batch of the 3 left: %d, day remaining %q", r.Status, r.Header.Get("X-RateLimit-Remaining-Day"))
			}
			if r := a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "one-more@example.com"}); r.Status != 429 {
				t.Errorf("a create once the day is spent: %d", r.Status)
			}
			if m := string(a.Do("GET", "/metrics", "", nil).Body); strings.Contains(m, "contactd_ratelimit_fallbacks_total 1") {
				t.Error("the shared limits fell back to the process's: the test did not exercise Redis")
			}
		})
	}
}

// A batch stores each contact exactly as POST /contact stores it: every column of the contact,
// its property and its event, nulls and empty strings apart, tags in their order (each
// contact's slice of the batch's tags, with contacts of no tags between), times to the
// microsecond. The two writes are separate statements; this keeps them one behaviour.
func TestBatchStoresWhatASingleCreateStores(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, single := a.Account("single")
	_, batched := a.Account("batched")
	items := []map[string]any{
		{"email": "full@example.com", "name": "Full Name", "phone": "+1 555 010 0100", "tags": []string{"b", "a", "vip"},
			"address": "123 N Main St Apt 4, Springfield, IL 62704", "assignedUserEmailId": "agent@example.com",
			"crmFields": map[string]any{"name": "Salesforce", "url": "https://crm.example.com/1", "source": "Web", "stage": "New",
				"createdDate": "2026-01-02T03:04:05.123456Z"}},
		{"email": "bare@example.com"},
		{"email": "empty@example.com", "name": "", "tags": []string{}, "crmFields": map[string]any{}},
		{"email": "one-tag@example.com", "tags": []string{"only"}, "address": "nowhere at all"},
		{"email": "Mixed.Case@Example.com", "tags": []string{"x", "y"}, "crmFields": map[string]any{"stage": "Won",
			"createdDate": "2025-12-31T23:59:59Z"}},
	}
	for _, item := range items {
		createContact(t, a, single, item)
	}
	for i, r := range batch(t, a, batched, "create", slices.Collect(func(yield func(any) bool) {
		for _, item := range items {
			if !yield(item) {
				return
			}
		}
	})...) {
		if r.Status != "created" {
			t.Fatalf("item %d: %+v", i, r)
		}
	}
	uuids := `[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`
	stored := func(account string) []string {
		rows, _ := testkit.Pool(a.Store).Query(context.Background(), `
			SELECT (to_jsonb(c) - ARRAY['account_id', 'contact_id', 'consent_token', 'consent_api_key_name',
			        'consent_api_key_prefix', 'created_at', 'updated_at', 'enrich_due_at', 'active_properties'])::text
			    || ' active:' || regexp_replace(c.active_properties::text, $2, 'ID', 'g')
			    || ' property:' || coalesce((SELECT string_agg((to_jsonb(p) - ARRAY['account_id', 'property_id',
			        'contact_id', 'created_at'])::text, ',') FROM properties p WHERE p.account_id = c.account_id
			        AND p.contact_id = c.contact_id), '')
			    || ' events:' || coalesce((SELECT string_agg(e.event_type || regexp_replace(regexp_replace(e.payload::text,
			        $2, 'ID', 'g'), '\d{4}-\d\d-\d\dT[\d:.]+Z', 'TIME', 'g'), ',' ORDER BY e.event_id)
			        FROM webhook_events e WHERE e.account_id = c.account_id AND e.contact_id = c.contact_id), '')
			FROM contacts c JOIN accounts ac ON ac.account_id = c.account_id
			WHERE ac.name = $1 ORDER BY c.email_key`, account, uuids)
		out, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	want, got := stored("single"), stored("batched")
	if len(want) != len(items) || len(got) != len(items) {
		t.Fatalf("stored %d contacts by POST /contact and %d by the batch, want %d each", len(want), len(got), len(items))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("contact %d\nby POST /contact: %s\nby the batch:     %s", i, want[i], got[i])
		}
	}
}
