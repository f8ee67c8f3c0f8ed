package httpapi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/contact"
	"github.com/contactd/contactd/internal/testkit"
)

func tagsOf(t *testing.T, r *testkit.Response) []string {
	t.Helper()
	if r.Status != 200 {
		t.Fatalf("tags: %d %s", r.Status, r.Body)
	}
	var out api.TagsResponse
	r.JSON(t, &out)
	return out.Tags
}

func TestTagsAddReplace(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	id := createContact(t, a, key, map[string]any{"email": "t@example.com", "tags": []string{"b", "a"}}).Contact.ContactId
	path := "/public/v1/contact/" + id + "/tags"

	got := tagsOf(t, a.Do("POST", path, key, map[string]any{"tags": []string{" C ", "A", "d", "c"}}))
	if strings.Join(got, ",") != "b,a,C,d" {
		t.Errorf("after add: %q, want existing first, new in order, dupes dropped", got)
	}
	got = tagsOf(t, a.Do("POST", path, key, map[string]any{"tags": []string{}}))
	if strings.Join(got, ",") != "b,a,C,d" {
		t.Errorf("after empty add: %q", got)
	}
	got = tagsOf(t, a.Do("PUT", path, key, map[string]any{"tags": []string{"x", " D ", "X"}}))
	if strings.Join(got, ",") != "x,D" {
		t.Errorf("after replace: %q", got)
	}
	r := a.Do("GET", "/public/v1/contact?contactId="+id, key, nil)
	var c api.Contact
	r.JSON(t, &c)
	if strings.Join(c.Tags, ",") != "x,D" {
		t.Errorf("stored tags %q", c.Tags)
	}
	got = tagsOf(t, a.Do("PUT", path, key, map[string]any{"tags": []string{}}))
	if len(got) != 0 || got == nil {
		t.Errorf("after clearing: %#v, want []", got)
	}
}

func TestTagsRejected(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	id := createContact(t, a, key, map[string]any{"email": "t@example.com", "tags": []string{"keep"}}).Contact.ContactId
	path := "/public/v1/contact/" + id + "/tags"
	for _, tc := range []struct {
		name, method string
		body         any
		field        string
	}{
		{"blank tag", "POST", map[string]any{"tags": []string{"ok", "  "}}, "body.tags.1"},
		{"empty tag", "PUT", map[string]any{"tags": []string{""}}, "body.tags.0"},
		{"tag 33", "POST", map[string]any{"tags": []string{strings.Repeat("x", 33)}}, "body.tags.0"},
		{"101 per request", "PUT", map[string]any{"tags": manyTags(101)}, "body.tags"},
		{"missing tags", "POST", map[string]any{}, "body.tags"},
		{"unknown field", "POST", map[string]any{"tags": []string{"a"}, "more": 1}, "body.more"},
		{"not an array", "POST", map[string]any{"tags": "a"}, "body.tags"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := a.Do(tc.method, path, key, tc.body)
			e := r.Error(t)
			if r.Status != 400 || e.Code != api.ErrorCodeInvalidRequest || (*e.Data.Errors)[0].Field != tc.field {
				t.Errorf("got %d %s, want 400 on %s", r.Status, r.Body, tc.field)
			}
		})
	}
	if got := tagsOf(t, a.Do("POST", path, key, map[string]any{"tags": []string{}})); strings.Join(got, ",") != "keep" {
		t.Errorf("rejected requests changed the tags: %q", got)
	}
}

func TestTagsPerContactLimit(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	subscribe(t, a, key, "https://hooks.example.com/limit", "TagsAdded")
	id := createContact(t, a, key, map[string]any{"email": "t@example.com"}).Contact.ContactId
	path := "/public/v1/contact/" + id + "/tags"
	for i := range 5 {
		batch := make([]string, 100)
		for j := range batch {
			batch[j] = fmt.Sprintf("t%d-%d", i, j)
		}
		if got := tagsOf(t, a.Do("POST", path, key, map[string]any{"tags": batch})); len(got) != (i+1)*100 {
			t.Fatalf("after batch %d: %d tags", i, len(got))
		}
	}
	r := a.Do("POST", path, key, map[string]any{"tags": []string{"one-too-many"}})
	if e := r.Error(t); r.Status != 400 || e.Code != api.ErrorCodeInvalidRequest || !strings.Contains(e.Message, "500") {
		t.Errorf("501st tag: %d %s", r.Status, r.Body)
	}
	// the refusal came inside the transaction, after the contact was locked: it rolled back,
	// and with it the event it would have emitted.
	var events, stray int
	if err := a.Store.Pool.QueryRow(context.Background(), `SELECT count(*), count(*) FILTER (WHERE payload::text LIKE '%one-too-many%') FROM webhook_events`).Scan(&events, &stray); err != nil {
		t.Fatal(err)
	}
	var due int
	if err := a.Store.Pool.QueryRow(context.Background(), `SELECT count(*) FROM webhook_deliveries WHERE status = 'Pending'`).Scan(&due); err != nil {
		t.Fatal(err)
	}
	if events != 5 || stray != 0 || due != 5 {
		t.Errorf("%d events (%d for the refused tag) and %d deliveries due, want 5, 0, 5", events, stray, due)
	}
	// adding tags the contact already has is not growth.
	if got := tagsOf(t, a.Do("POST", path, key, map[string]any{"tags": []string{"T0-0"}})); len(got) != 500 {
		t.Errorf("re-adding an existing tag: %d tags", len(got))
	}
}

func TestTagsUnknownContact(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	for _, id := range []string{"01939d3c-0000-7000-8000-000000000000", "nope", "01939D3C-0000-7000-8000-00000000000"} {
		for _, m := range []string{"POST", "PUT"} {
			r := a.Do(m, "/public/v1/contact/"+id+"/tags", key, map[string]any{"tags": []string{"a"}})
			if e := r.Error(t); r.Status != 404 || e.Code != api.ErrorCodeContactDoesNotExist {
				t.Errorf("%s %s: %d %s", m, id, r.Status, r.Body)
			}
		}
	}
}

// Tag events go to the outbox in the transaction of the change: only the tags actually
// added or removed, and nothing for a change that was refused.
func TestTagEventsOutbox(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	for _, typ := range []string{"TagsAdded", "TagsRemoved"} {
		if r := a.Do("POST", "/public/v1/webhooks", key, map[string]any{"url": "https://hooks.example.com/" + typ, "eventType": typ}); r.Status != 200 {
			t.Fatalf("subscribe: %d %s", r.Status, r.Body)
		}
	}
	id := createContact(t, a, key, map[string]any{"email": "ev@example.com", "tags": []string{"a", "b"}}).Contact.ContactId
	path := "/public/v1/contact/" + id + "/tags"
	tagsOf(t, a.Do("POST", path, key, map[string]any{"tags": []string{"B", "c"}}))
	tagsOf(t, a.Do("PUT", path, key, map[string]any{"tags": []string{"c", "d"}}))
	tagsOf(t, a.Do("PUT", path, key, map[string]any{"tags": []string{"C", "d"}})) // respelling: no event
	a.Do("POST", path, key, map[string]any{"tags": []string{" "}})                // refused: no event

	rows, err := a.Store.Pool.Query(context.Background(), `
		SELECT e.event_type, e.payload->'data'->>'contactInfo', coalesce(e.payload->'data'->'tagsAddedInfo'->>'tagsAdded', e.payload->'data'->'tagsRemovedInfo'->>'tagsRemoved'),
		       (SELECT count(*) FROM webhook_deliveries d WHERE d.event_id = e.event_id)
		FROM webhook_events e ORDER BY e.event_id`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var typ, info, tags string
		var deliveries int
		if err := rows.Scan(&typ, &info, &tags, &deliveries); err != nil {
			t.Fatal(err)
		}
		if deliveries != 1 || !strings.Contains(info, `"contactId":"`+id+`"`) || !strings.Contains(info, `"propertyId":""`) {
			t.Errorf("%s: %d deliveries, contactInfo %s", typ, deliveries, info)
		}
		got = append(got, typ+" "+tags)
	}
	want := []string{`TagsAdded ["a","b"]`, `TagsAdded ["c"]`, `TagsAdded ["d"]`, `TagsRemoved ["a","b"]`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("events:\n got %q\nwant %q", got, want)
	}
}

// A tag change's compare-and-swap is tried at most contact.MaxTagSwapAttempts times: each
// attempt reads the contact and evaluates its segments again, so changes racing without end
// would cost that without end. A trigger makes every swap of one contact find it changed (its
// update skipped, as when another change came first); the change is refused with 503 after
// exactly that many swaps, and the contact's tags are as they were. (TestSubscribedTagChangesRacing:
// 24 changes of one contact at once all land.)
func TestATagChangeGivesUpAfterItsAttempts(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	c := createContact(t, a, key, map[string]any{"email": "held@example.com", "tags": []string{"a"}})
	if _, err := a.Store.Pool.Exec(context.Background(), `
		CREATE TABLE swaps_skipped (n int NOT NULL);
		INSERT INTO swaps_skipped VALUES (0);
		CREATE FUNCTION skip_swap() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN UPDATE swaps_skipped SET n = n + 1; RETURN NULL; END $$;
		CREATE TRIGGER skip_swap BEFORE UPDATE OF tags ON contacts FOR EACH ROW
			WHEN (OLD.email = 'held@example.com') EXECUTE FUNCTION skip_swap()`); err != nil {
		t.Fatal(err)
	}
	r := a.Do("POST", "/public/v1/contact/"+c.Contact.ContactId+"/tags", key, map[string]any{"tags": []string{"b"}})
	if e := r.Error(t); r.Status != 503 || e.Code != "ServiceUnavailable" {
		t.Fatalf("a change that never finds its contact as it read it: %d %s, want 503", r.Status, r.Body)
	}
	if n := a.Count(t, "SELECT n FROM swaps_skipped"); n != contact.MaxTagSwapAttempts {
		t.Errorf("%d swaps tried, want %d", n, contact.MaxTagSwapAttempts)
	}
	if n := a.Count(t, "SELECT count(*) FROM contacts WHERE email = 'held@example.com' AND tags = '{a}'"); n != 1 {
		t.Error("the contact's tags changed")
	}
}
