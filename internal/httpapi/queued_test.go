package httpapi_test

import (
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/testkit"
)

// TestSubscribedChangesQueueInTheirStatement: a create or a tag change of an account that
// subscribes to its events writes the change, the events and their deliveries in its one
// statement, sent in its group like a change nobody subscribes to (no transaction of its
// own), and the delivery goes out at once; a batch's creates queue theirs in the batch's
// statement. Each delivery has a time-ordered id of its event's
// time, and only live subscriptions get one.
func TestSubscribedChangesQueueInTheirStatement(t *testing.T) {
	t.Parallel()
	a, _, key := deliveringAPI(t)
	rc := listen(t, a, key, "TagsAdded", "TagsRemoved")
	gone := testkit.NewReceiver(t)
	r := subscribe(t, a, key, gone.URL, "TagsAdded")
	var removed api.WebhookSubscription
	r.JSON(t, &removed)
	if r := a.Do("DELETE", "/public/v1/webhooks/"+removed.SubscriptionId, key, nil); r.Status != 204 {
		t.Fatalf("remove: %d %s", r.Status, r.Body)
	}

	id := createContact(t, a, key, map[string]any{"email": "q@example.com", "tags": []string{"a"}}).Contact.ContactId
	if ev := nextEvent(t, rc); ev.EventType != api.EventTypeTagsAdded || ev.Data.ContactInfo.ContactId != id {
		t.Fatalf("after the create: %+v", ev)
	}
	tagsOf(t, a.Do("PUT", "/public/v1/contact/"+id+"/tags", key, map[string]any{"tags": []string{"b"}}))
	got := map[api.EventType]bool{}
	for range 2 {
		got[nextEvent(t, rc).EventType] = true
	}
	if !got[api.EventTypeTagsAdded] || !got[api.EventTypeTagsRemoved] {
		t.Fatalf("after replacing the tags: %v, want TagsAdded and TagsRemoved", got)
	}

	// a batch's creates queue theirs in the batch's statement
	var batched []string
	for _, r := range batch(t, a, key, "create", map[string]any{"email": "q1@example.com", "tags": []string{"x"}},
		map[string]any{"email": "q2@example.com", "tags": []string{"y"}}) {
		batched = append(batched, r.ContactId.String())
	}
	arrived := map[string]bool{}
	for range 2 {
		arrived[nextEvent(t, rc).Data.ContactInfo.ContactId] = true
	}
	if !arrived[batched[0]] || !arrived[batched[1]] {
		t.Fatalf("the batch's TagsAdded went to %v, want %v", arrived, batched)
	}

	text := scrape(t, a)
	for _, want := range []string{
		`contactd_db_group_size_count{group="contact_create"} 1`,
		`contactd_db_group_size_count{group="tags_swap"} 1`,
		`contactd_db_group_size_count{group="tags_get"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, grep(text, "contactd_db_group_size_count"))
		}
	}
	if n := a.Count(t, `SELECT count(*) FROM webhook_deliveries d
		JOIN webhook_events e ON e.account_id = d.account_id AND e.event_id = d.event_id
		WHERE e.contact_id = ANY($1::uuid[]) AND d.created_at = e.occurred_at
		  AND substr(d.delivery_id::text, 15, 1) = '7'
		  AND ('x' || translate(left(d.delivery_id::text, 13), '-', ''))::bit(48)::bigint = (extract(epoch FROM e.occurred_at) * 1000)::bigint`,
		append(batched, id)); n != 5 {
		t.Errorf("%d of the contacts' deliveries written with their events' times, ids of those times; want 5", n)
	}
	if n := a.Count(t, `SELECT count(*) FROM webhook_deliveries WHERE subscription_id = $1::uuid`, uuid.MustParse(removed.SubscriptionId)); n != 0 {
		t.Errorf("%d deliveries queued to a removed subscription", n)
	}
	a.DeliveriesSettled(t)
	if text := scrape(t, a); !strings.Contains(text, `contactd_db_group_size_count{group="delivery_succeed"}`) {
		t.Errorf("/metrics lacks the workers' successes' groups:\n%s", grep(text, "contactd_db_group_size_count"))
	}
	rc.None(t)
	gone.None(t)
}
