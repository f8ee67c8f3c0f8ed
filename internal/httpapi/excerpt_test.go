package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/auth"
	"github.com/contactd/contactd/internal/testkit"
)

// The delivery log keeps the start of what the receiver answered.
func TestDeliveryLogKeepsTheAnswer(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t, testkit.LocalDelivery)
	a.StartWorkers()
	account, key := a.Account("acme")
	rc := testkit.NewReceiver(t)
	rc.Respond = func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"error":"maintenance until 10:00"}` + strings.Repeat(" ", 400)))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
	var sub api.WebhookSubscription
	subscribe(t, a, key, rc.URL, "TagsAdded").JSON(t, &sub)
	createContact(t, a, key, map[string]any{"email": "x@example.com", "tags": []string{"a"}})
	rc.Next(t)
	var list api.DeliveryAttemptList
	testkit.Eventually(t, "the attempt recorded", func() bool {
		a.Do("GET", "/public/v1/webhooks/"+sub.SubscriptionId+"/deliveries", key, nil).JSON(t, &list)
		return len(list.Attempts) > 0
	})
	if len(list.Attempts) != 1 || list.Attempts[0].ResponseExcerpt == nil ||
		!strings.HasPrefix(*list.Attempts[0].ResponseExcerpt, `{"error":"maintenance until 10:00"}`) || len(*list.Attempts[0].ResponseExcerpt) != 256 {
		t.Fatalf("attempts %+v", list.Attempts)
	}
	// a receiver may echo what it received: a key that cannot read events does not see it
	for _, scopes := range [][]string{{"webhooks:read"}, {"webhooks:read", "events:read"}} {
		k, err := a.Svc.Auth.CreateKeyWith(context.Background(), account, auth.KeyOptions{Name: strings.Join(scopes, "+"), Scopes: scopes})
		if err != nil {
			t.Fatal(err)
		}
		var seen api.DeliveryAttemptList
		if r := a.Do("GET", "/public/v1/webhooks/"+sub.SubscriptionId+"/deliveries", k, nil); r.Status != 200 {
			t.Fatalf("%v: %d %s", scopes, r.Status, r.Body)
		} else {
			r.JSON(t, &seen)
		}
		withExcerpt := len(seen.Attempts) == 1 && seen.Attempts[0].ResponseExcerpt != nil
		if want := len(scopes) == 2; withExcerpt != want || len(seen.Attempts) != 1 || seen.Attempts[0].ResponseStatus == nil {
			t.Errorf("a key with %v: %+v, want the excerpt %v", scopes, seen.Attempts, want)
		}
	}
}

// Setting a filter needs events:read besides webhooks:write, as subscribing does: which events
// a filter let through would otherwise tell a key what events hold. Everything else PATCH
// changes does not.
func TestSettingAFilterNeedsEventsRead(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	account, key := a.Account("acme")
	var sub api.WebhookSubscription
	subscribe(t, a, key, "https://hooks.example.com/a", "TagsAdded").JSON(t, &sub)
	writer, err := a.Svc.Auth.CreateKeyWith(context.Background(), account, auth.KeyOptions{Name: "w", Scopes: []string{"webhooks:write", "webhooks:read"}})
	if err != nil {
		t.Fatal(err)
	}
	path := "/public/v1/webhooks/" + sub.SubscriptionId
	r := a.Do("PATCH", path, writer, map[string]any{"filter": map[string]any{"data.tagsAddedInfo.tagsAdded": "vip"}, "maxDeliveriesPerSecond": 5})
	if r.Status != 403 || r.Error(t).Code != "Forbidden" || !strings.Contains(r.Error(t).Message, "events:read") {
		t.Errorf("a filter without events:read: %d %s", r.Status, r.Body)
	}
	if n := a.Count(t, "SELECT count(*) FROM webhook_subscriptions WHERE filter IS NULL AND max_per_second IS NULL"); n != 1 {
		t.Errorf("the refused PATCH changed the subscription")
	}
	for _, body := range []map[string]any{{"maxDeliveriesPerSecond": 5}, {"paused": true}, {"filter": nil}, {"filter": map[string]any{}}} {
		if r := a.Do("PATCH", path, writer, body); r.Status != 200 {
			t.Errorf("%v without events:read: %d %s", body, r.Status, r.Body)
		}
	}
	if r := a.Do("PATCH", path, key, map[string]any{"filter": map[string]any{"data.tagsAddedInfo.tagsAdded": "vip"}}); r.Status != 200 {
		t.Errorf("a filter with events:read: %d %s", r.Status, r.Body)
	}
}

// A paused subscription collects its deliveries and sends them when resumed; a throttle
// change while paused does not resume it.
func TestPauseAndResume(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t, testkit.LocalDelivery)
	a.StartWorkers()
	_, key := a.Account("acme")
	rc := testkit.NewReceiver(t)
	var sub api.WebhookSubscription
	subscribe(t, a, key, rc.URL, "TagsAdded").JSON(t, &sub)
	path := "/public/v1/webhooks/" + sub.SubscriptionId
	if r := a.Do("PATCH", path, key, map[string]any{"paused": true}); r.Status != 200 || !strings.Contains(string(r.Body), `"paused":true`) {
		t.Fatalf("pause: %d %s", r.Status, r.Body)
	}
	if r := a.Do("PATCH", path, key, map[string]any{"maxDeliveriesPerSecond": 50}); r.Status != 200 || !strings.Contains(string(r.Body), `"paused":true`) {
		t.Errorf("a throttle while paused: %d %s", r.Status, r.Body)
	}
	if r := a.Do("GET", "/public/v1/webhooks", key, nil); !strings.Contains(string(r.Body), `"paused":true`) {
		t.Errorf("listing: %s", r.Body)
	}
	createContact(t, a, key, map[string]any{"email": "a@example.com", "tags": []string{"one"}})
	createContact(t, a, key, map[string]any{"email": "b@example.com", "tags": []string{"two"}})
	// due, and looked at by the workers since: still untouched
	a.DeliveryWorkersLooked(t)
	if n := a.Count(t, `SELECT count(*) FROM webhook_deliveries WHERE status = 'Pending' AND attempts = 0
		AND leased_until IS NULL AND next_attempt_at <= now()`); n != 2 {
		t.Errorf("%d deliveries due and untouched while paused, want 2", n)
	}
	rc.None(t)
	if r := a.Do("PATCH", path, key, map[string]any{"paused": false}); r.Status != 200 || strings.Contains(string(r.Body), `"paused"`) {
		t.Fatalf("resume: %d %s", r.Status, r.Body)
	}
	first, second := rc.Next(t), rc.Next(t)
	if !strings.Contains(string(first.Body), `"one"`) || !strings.Contains(string(second.Body), `"two"`) {
		t.Errorf("after resuming, in order: %s then %s", first.Body, second.Body)
	}
}

// A test event reaches its subscription alone, signed and logged like any delivery, and stays
// out of the events feed.
func TestSendTestEvent(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t, testkit.LocalDelivery)
	a.StartWorkers()
	_, key := a.Account("acme")
	rc, other := testkit.NewReceiver(t), testkit.NewReceiver(t)
	var sub api.WebhookSubscription
	subscribe(t, a, key, rc.URL, "ContactDetailsUpdated").JSON(t, &sub)
	subscribe(t, a, key, other.URL, "ContactDetailsUpdated")
	r := a.Do("POST", "/public/v1/webhooks/"+sub.SubscriptionId+"/test", key, nil)
	var d api.Delivery
	r.JSON(t, &d)
	if r.Status != 200 || d.Status != "Pending" || d.EventType != "ContactDetailsUpdated" {
		t.Fatalf("test: %d %s", r.Status, r.Body)
	}
	got := rc.Next(t)
	testkit.ValidatePayload(t, got.Body)
	if got.Header.Get("webhook-id") != d.EventId || !strings.Contains(string(got.Body), `"contactId":"00000000-0000-7000-8000-000000000000"`) ||
		!strings.Contains(string(got.Body), "contactDetailsUpdatedInfo") {
		t.Errorf("the test delivery: %v %s", got.Header, got.Body)
	}
	a.DeliveriesSettled(t)
	other.None(t)
	// the feed shows an event once every transaction before it has ended: a real change made
	// after the test event, seen in the feed, proves the feed could show the test event too
	var created api.CreateContactResult
	a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "after-the-test@example.com"}).JSON(t, &created)
	a.Do("PATCH", "/public/v1/contact/"+created.Contact.ContactId, key, map[string]any{"name": "Later"})
	var feed api.EventList
	testkit.Eventually(t, "the later change in the feed", func() bool {
		a.Do("GET", "/public/v1/events?eventType=ContactDetailsUpdated", key, nil).JSON(t, &feed)
		return len(feed.Events) > 0
	})
	if r := a.Do("GET", "/public/v1/events/"+d.EventId, key, nil); r.Status != 404 {
		t.Errorf("the test event in the feed: %d", r.Status)
	}
	for _, e := range feed.Events {
		if e.EventId == d.EventId || e.Data.ContactInfo.ContactId != created.Contact.ContactId {
			t.Errorf("the feed has %s %s of %s, want only the later change", e.EventType, e.EventId, e.Data.ContactInfo.ContactId)
		}
	}
	if r := a.Do("DELETE", "/public/v1/webhooks/"+sub.SubscriptionId, key, nil); r.Status != 204 {
		t.Fatal(r.Status)
	}
	if r := a.Do("POST", "/public/v1/webhooks/"+sub.SubscriptionId+"/test", key, nil); r.Status != 400 {
		t.Errorf("a removed subscription: %d %s", r.Status, r.Body)
	}
}
