package httpapi_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/testkit"
)

// membershipEvents reads the account's ContactEnteredSegment and ContactLeftSegment events
// from *seen on, in the order they were recorded, as "+segment contact" and "-segment contact"
// (contact: its emailId, or its id when the event carries no email), and moves *seen past them.
func membershipEvents(t *testing.T, a *testkit.API, account uuid.UUID, seen *int) []string {
	t.Helper()
	rows, err := a.Store.Pool.Query(context.Background(), `
		SELECT event_type, coalesce(nullif(payload::jsonb #>> '{data,contactInfo,emailId}', ''), payload::jsonb #>> '{data,contactInfo,contactId}'),
		       coalesce(payload::jsonb #>> '{data,contactEnteredSegmentInfo,segmentName}', payload::jsonb #>> '{data,contactLeftSegmentInfo,segmentName}')
		FROM webhook_events WHERE account_id = $1 AND event_type IN ('ContactEnteredSegment', 'ContactLeftSegment')
		ORDER BY event_id OFFSET $2`, account, *seen)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var typ, who, segment string
		if err := rows.Scan(&typ, &who, &segment); err != nil {
			t.Fatal(err)
		}
		sign := "+"
		if typ == "ContactLeftSegment" {
			sign = "-"
		}
		out = append(out, sign+segment+" "+who)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	*seen += len(out)
	return out
}

func saveSegment(t *testing.T, a *testkit.API, key, name, kind string, conds ...map[string]any) string {
	t.Helper()
	cs := make([]any, len(conds))
	for i, c := range conds {
		cs[i] = c
	}
	r := a.Do("POST", "/public/v1/segments", key, map[string]any{"name": name, "kind": kind,
		"filter": map[string]any{"groups": []any{map[string]any{"conditions": cs}}}})
	var sg api.Segment
	if r.JSON(t, &sg); r.Status != 200 {
		t.Fatalf("save %s: %d %s", name, r.Status, r.Body)
	}
	return sg.SegmentId
}

func cond(attr, op string, value any) map[string]any {
	c := map[string]any{"attribute": attr, "operator": op}
	if value != nil {
		c["value"] = value
	}
	return c
}

// Every write path keeps the dynamic segments' membership in its transaction, with one event
// per change: create, PATCH, tags, activity, properties, batch create and upsert, enrichment,
// merge, delete and erasure; a snapshot changes only by hand, and a contact that goes leaves
// it too.
func TestSegmentMembershipOnEveryWrite(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	account, key := a.Account("acme")
	il := saveSegment(t, a, key, "IL", "dynamic", cond("address.state", "eq", "IL"))
	saveSegment(t, a, key, "VIP", "dynamic", cond("tags", "contains", "vip"))
	saveSegment(t, a, key, "Clicker", "dynamic", cond("engagement.numOfEmailClicks", "gte", 1))
	saveSegment(t, a, key, "Ann", "dynamic", cond("name", "eq", "Ann"))
	saveSegment(t, a, key, "Valid", "dynamic", cond("emailStatus", "eq", "Valid"))
	snap := saveSegment(t, a, key, "Snap", "snapshot", cond("email", "exists", nil))
	a.Backfill(t)
	// the new types are subscribed to and filtered like any: Illinois' entries only
	var sub api.WebhookSubscription
	r := a.Do("POST", "/public/v1/webhooks", key, map[string]any{"url": "https://hooks.example.com/segments", "eventType": "ContactEnteredSegment",
		"filter": map[string]any{"data.contactEnteredSegmentInfo.segmentId": il}})
	if r.JSON(t, &sub); r.Status != 200 {
		t.Fatalf("subscribe: %d %s", r.Status, r.Body)
	}
	seen := 0
	expect := func(step string, want ...string) {
		t.Helper()
		got := membershipEvents(t, a, account, &seen)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s: events %q, want %q", step, got, want)
		}
	}
	ok := func(r *testkit.Response, what string) {
		t.Helper()
		if r.Status != 200 && r.Status != 204 {
			t.Fatalf("%s: %d %s", what, r.Status, r.Body)
		}
	}

	ann := createContact(t, a, key, map[string]any{"email": "ann@example.com", "name": "Ann", "tags": []string{"vip"},
		"address": "1 Main St, Springfield, IL 62704"}).Contact
	expect("create", "+IL ann@example.com", "+VIP ann@example.com", "+Ann ann@example.com")
	ok(a.Do("PATCH", "/public/v1/contact/"+ann.ContactId, key, map[string]any{"name": "Anne"}), "patch")
	expect("patch", "-Ann ann@example.com")
	ok(a.Do("DELETE", "/public/v1/contact/"+ann.ContactId+"/tags", key, map[string]any{"tags": []string{"VIP"}}), "untag")
	ok(a.Do("POST", "/public/v1/contact/"+ann.ContactId+"/tags", key, map[string]any{"tags": []string{"vip"}}), "tag")
	expect("tags", "-VIP ann@example.com", "+VIP ann@example.com")
	ok(a.Do("POST", "/public/v1/contact/"+ann.ContactId+"/activity", key, map[string]any{"type": "EmailClick"}), "activity")
	ok(a.Do("POST", "/public/v1/contact/"+ann.ContactId+"/activity", key, map[string]any{"type": "EmailClick"}), "activity again")
	expect("activity", "+Clicker ann@example.com")
	got := getContact(t, a, key, ann.ContactId)
	ok(a.Do("POST", "/public/v1/contact/property/"+got.Properties[0].PropertyId+"/archive", key, nil), "archive")
	expect("archive the IL property", "-IL ann@example.com")
	ok(a.Do("POST", "/public/v1/contact/"+ann.ContactId+"/property", key, map[string]any{"address": "9 Elm St, Peoria, IL 61602"}), "property")
	expect("an IL property", "+IL ann@example.com")

	res := batch(t, a, key, "upsert", map[string]any{"email": "bob@example.com", "address": "2 Main St, Springfield, IL 62704"},
		map[string]any{"email": "ann@example.com", "name": "Ann"})
	expect("batch", "+IL bob@example.com", "+Ann ann@example.com")
	bob := res[0].ContactId.String()

	a.DNS.SetMX("good.example", "mx.good.example")
	carl := createContact(t, a, key, map[string]any{"email": "carl@good.example"}).Contact
	for {
		n, err := a.Svc.Enrich.RunBatch(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	expect("enrichment", "+Valid carl@good.example")

	ok(a.Do("PUT", "/public/v1/segments/"+snap+"/contacts/"+ann.ContactId, key, nil), "add to the snapshot")
	ok(a.Do("PUT", "/public/v1/segments/"+snap+"/contacts/"+ann.ContactId, key, nil), "add again")
	ok(a.Do("DELETE", "/public/v1/segments/"+snap+"/contacts/"+bob, key, nil), "remove a non-member")
	expect("snapshot by hand", "+Snap ann@example.com")
	for _, tc := range []struct {
		method, path string
		status       int
		code         string
	}{
		{"PUT", "/public/v1/segments/" + il + "/contacts/" + ann.ContactId, 400, "SegmentIsDynamic"},
		{"DELETE", "/public/v1/segments/" + il + "/contacts/" + ann.ContactId, 400, "SegmentIsDynamic"},
		{"PUT", "/public/v1/segments/" + snap + "/contacts/" + uuid.Must(uuid.NewV7()).String(), 404, "ContactDoesNotExist"},
		{"PUT", "/public/v1/segments/" + snap + "/contacts/not-an-id", 404, "ContactDoesNotExist"},
		{"PUT", "/public/v1/segments/" + uuid.Must(uuid.NewV7()).String() + "/contacts/" + ann.ContactId, 404, "SegmentDoesNotExist"},
		{"PUT", "/public/v1/segments/not-an-id/contacts/not-an-id", 404, "SegmentDoesNotExist"},
	} {
		r := a.Do(tc.method, tc.path, key, nil)
		if e := r.Error(t); r.Status != tc.status || string(e.Code) != tc.code {
			t.Errorf("%s %s: %d %s, want %d %s", tc.method, tc.path, r.Status, r.Body, tc.status, tc.code)
		}
	}
	expect("refused hand changes")

	if _, r := merge(t, a, key, map[string]any{"primaryContactId": ann.ContactId, "duplicateContactIds": []string{bob}}); r.Status != 200 {
		t.Fatalf("merge: %d %s", r.Status, r.Body)
	}
	expect("merge", "-IL bob@example.com")
	ok(a.Do("DELETE", "/public/v1/contact/"+ann.ContactId, key, nil), "delete")
	expect("delete", "-IL ann@example.com", "-VIP ann@example.com", "-Clicker ann@example.com", "-Ann ann@example.com",
		"-Snap ann@example.com")
	ok(a.Do("POST", "/public/v1/contact/"+carl.ContactId+"/erase", key, nil), "erase")
	expect("erase: no personal data", "-Valid "+carl.ContactId)
	if n := a.Count(t, "SELECT count(*) FROM segment_members"); n != 0 {
		t.Errorf("%d members left with no contacts", n)
	}

	// a segment saved over contacts that exist is backfilled with no events
	var want []string
	for _, email := range []string{"d@example.com", "e@example.com", "f@example.com"} {
		c := createContact(t, a, key, map[string]any{"email": email, "address": "3 Main St, Springfield, IL 62704"}).Contact
		want = append(want, c.ContactId)
	}
	expect("three more in IL", "+IL d@example.com", "+IL e@example.com", "+IL f@example.com")
	again := saveSegment(t, a, key, "IL again", "dynamic", cond("address.state", "eq", "IL"))
	a.Backfill(t)
	expect("backfill")
	// Illinois' entries: ann (created, then her new property), bob, and d, e and f
	if n := a.Count(t, "SELECT count(*) FROM webhook_deliveries WHERE subscription_id = $1::uuid", sub.SubscriptionId); n != 6 {
		t.Errorf("%d deliveries to the subscriber of Illinois' entries, want 6", n)
	}
	var sg api.Segment
	r = a.Do("GET", "/public/v1/segments/"+again, key, nil)
	if r.JSON(t, &sg); sg.Status != api.Ready || sg.Evaluated != 3 {
		t.Errorf("after the backfill: %s", r.Body)
	}
	var members []string
	cursor := ""
	for pages := 0; ; pages++ {
		var page api.SegmentMemberList
		r := a.Do("GET", "/public/v1/segments/"+again+"/contacts?limit=2"+cursor, key, nil)
		if r.JSON(t, &page); r.Status != 200 || page.Count != 3 || pages > 2 {
			t.Fatalf("members page %d: %d %s", pages, r.Status, r.Body)
		}
		for _, m := range page.Members {
			members = append(members, m.ContactId)
		}
		if page.NextCursor == nil {
			break
		}
		cursor = "&cursor=" + *page.NextCursor
	}
	if strings.Join(members, ",") != strings.Join(want, ",") {
		t.Errorf("members %v, want %v", members, want)
	}
	// a row a process of the release before left (it deleted a contact without its rows) goes
	// with the next backfill of the segment
	gone := uuid.Must(uuid.NewV7())
	if _, err := a.Store.Pool.Exec(context.Background(), `INSERT INTO segment_members (account_id, segment_id, contact_id, added_at)
		VALUES ($1, $2, $3, now())`, account, again, gone); err != nil {
		t.Fatal(err)
	}
	ok(a.Do("PATCH", "/public/v1/segments/"+again, key, map[string]any{"filter": map[string]any{"groups": []any{
		map[string]any{"conditions": []any{cond("address.state", "neq", "WI")}}}}}), "edit")
	a.Backfill(t)
	if n := a.Count(t, "SELECT count(*) FROM segment_members WHERE segment_id = $1::uuid", again); n != 3 {
		t.Errorf("%d members after the backfill, want the 3 contacts", n)
	}
	if r := a.Do("GET", "/public/v1/segments/"+again+"/contacts?cursor=nope", key, nil); r.Status != 400 {
		t.Errorf("a cursor this list did not give: %d %s", r.Status, r.Body)
	}
}
