package httpapi_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/internal/event"
	"github.com/contactd/contactd/internal/subscription"
	"github.com/contactd/contactd/internal/testkit"
)

// count is how many rows of table (webhook_events, webhook_deliveries) the account has.
func count(t *testing.T, a *testkit.API, table string, account uuid.UUID) int {
	t.Helper()
	var n int
	if err := a.Store.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM `+table+` WHERE account_id = $1`, account).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// deliveryCount is how many deliveries the account's changes queued.
func deliveryCount(t *testing.T, a *testkit.API, account uuid.UUID) int {
	return count(t, a, "webhook_deliveries", account)
}

// TestTagChangesRacing: tag changes nobody subscribes to take the lock-free compare-and-swap
// path; racing ones on one contact all land, none overwrites another. The race is proven:
// the test holds the contact's row, so the first swap waits for it, until every other change
// has read the tags and queued its swap; each of those then finds the tags changed.
func TestTagChangesRacing(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	ctx := context.Background()
	testkit.Eventually(t, "the subscriptions cache", a.Svc.Subscribers.Caching)
	account, key := a.Account("racing")
	id := createContact(t, a, key, map[string]any{"email": "race@example.com", "tags": []string{"first"}}).Contact.ContactId
	path := "/public/v1/contact/" + id + "/tags"
	held := holdContacts(t, a, account, id)
	retried := a.Svc.Contacts.TagSwapRetries()
	const n = 24
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if r := a.Do("POST", path, key, map[string]any{"tags": []string{fmt.Sprintf("t%02d", i)}}); r.Status != 200 {
				t.Errorf("add t%02d: %d %s", i, r.Status, r.Body)
			}
		})
	}
	testkit.Eventually(t, "one swap waiting for the held row, every other queued behind it", func() bool {
		return a.LockWaiters(t) == 1 && a.Svc.Contacts.TagSwapsWaiting() == n-1
	})
	if err := held.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if got := a.Svc.Contacts.TagSwapRetries() - retried; got < n-1 {
		t.Errorf("%d swaps found the tags changed, want at least %d: the changes did not meet", got, n-1)
	}
	got := tagsOf(t, a.Do("POST", path, key, map[string]any{"tags": []string{}}))
	if len(got) != n+1 || got[0] != "first" {
		t.Fatalf("after %d racing adds: %d tags %q", n, len(got), got)
	}
	for i := range n {
		if !slices.Contains(got, fmt.Sprintf("t%02d", i)) {
			t.Errorf("t%02d was lost", i)
		}
	}
	// every change is in the events feed, with nobody to deliver it to
	if e, d := count(t, a, "webhook_events", account), deliveryCount(t, a, account); e != n+1 || d != 0 {
		t.Errorf("%d events and %d deliveries stored with no subscriber, want %d and 0", e, d, n+1)
	}
}

// TestSubscribedTagChangesRacing: racing tag changes of an account that subscribes take the
// same compare-and-swap, their deliveries in its statement: every change lands, and each
// event, once, gets exactly one delivery per live subscription (a swap that lost and went
// again wrote none the first time).
func TestSubscribedTagChangesRacing(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	testkit.Eventually(t, "the subscriptions cache", a.Svc.Subscribers.Caching)
	account, key := a.Account("racing")
	subs := []string{"https://hooks.example.com/one", "https://hooks.example.com/two"}
	for _, url := range subs {
		if r := a.Do("POST", "/public/v1/webhooks", key, map[string]any{"url": url, "eventType": "TagsAdded"}); r.Status != 200 {
			t.Fatalf("subscribe: %d %s", r.Status, r.Body)
		}
	}
	id := createContact(t, a, key, map[string]any{"email": "race@example.com", "tags": []string{"first"}}).Contact.ContactId
	path := "/public/v1/contact/" + id + "/tags"
	const n = 24
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if r := a.Do("POST", path, key, map[string]any{"tags": []string{fmt.Sprintf("t%02d", i)}}); r.Status != 200 {
				t.Errorf("add t%02d: %d %s", i, r.Status, r.Body)
			}
		})
	}
	wg.Wait()
	if got := tagsOf(t, a.Do("POST", path, key, map[string]any{"tags": []string{}})); len(got) != n+1 {
		t.Fatalf("after %d racing adds: %d tags %q", n, len(got), got)
	}
	if e, d := count(t, a, "webhook_events", account), deliveryCount(t, a, account); e != n+1 || d != len(subs)*(n+1) {
		t.Errorf("%d events and %d deliveries, want %d and %d", e, d, n+1, len(subs)*(n+1))
	}
	if odd := countRows(t, a, `SELECT count(*) FROM (
		SELECT e.event_id FROM webhook_events e
		LEFT JOIN webhook_deliveries d ON d.account_id = e.account_id AND d.event_id = e.event_id
		WHERE e.account_id = $1 GROUP BY e.event_id
		HAVING count(d.delivery_id) <> 2 OR count(DISTINCT d.subscription_id) <> 2) odd`, account); odd != 0 {
		t.Errorf("%d events without exactly one delivery to each subscription", odd)
	}
}

// TestSubscriptionReachesTheCache: which event types an account subscribes to is cached,
// and a new subscription counts from the next change: at once in the process that made it,
// through NOTIFY in any other, and always while the cache's listener is down.
func TestSubscriptionReachesTheCache(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	ctx := context.Background()
	testkit.Eventually(t, "the subscriptions cache", a.Svc.Subscribers.Caching)
	account, key := a.Account("subscribing")
	id := createContact(t, a, key, map[string]any{"email": "sub@example.com"}).Contact.ContactId
	path := "/public/v1/contact/" + id + "/tags"
	tag := 0
	addTag := func() {
		tag++
		tagsOf(t, a.Do("POST", path, key, map[string]any{"tags": []string{fmt.Sprintf("tag%d", tag)}}))
	}
	addTag() // the account is now cached as subscribing to nothing
	if a.Svc.Subscribers.MayHave(ctx, account, event.TagsAdded) {
		t.Fatal("no subscription, yet the cache says there may be one")
	}

	// In this process: the very next change after the 200 is delivered.
	if r := a.Do("POST", "/public/v1/webhooks", key, map[string]any{"url": "https://hooks.example.com/added", "eventType": "TagsAdded"}); r.Status != 200 {
		t.Fatalf("subscribe: %d %s", r.Status, r.Body)
	}
	addTag()
	if d := deliveryCount(t, a, account); d != 1 {
		t.Fatalf("first change after subscribing: %d deliveries, want 1", d)
	}

	// In another process (its own subscription.Service on the same database): NOTIFY brings it here.
	other := subscription.NewService(a.Store, event.NewEmitter(nil, event.NewSubscribers(a.Store, time.Now), nil), a.Svc.Secrets, time.Now,
		subscription.URLRules{AllowHTTP: true})
	if a.Svc.Subscribers.MayHave(ctx, account, event.TagsRemoved) {
		t.Fatal("TagsRemoved: cached as subscribed before anyone subscribed")
	}
	forgotten := a.Svc.Subscribers.Invalidations() // expiry (SubscribersTTL) leaves it unchanged
	if _, err := other.Create(ctx, account, subscription.NewSubscription{URL: "https://hooks.example.com/removed", EventType: event.TagsRemoved}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the other process's subscription", func() bool {
		return a.Svc.Subscribers.MayHave(ctx, account, event.TagsRemoved)
	})
	if a.Svc.Subscribers.Invalidations() == forgotten {
		t.Errorf("the subscription reached the cache without its notification (the entry expired)")
	}

	// Listener down: the cache turns off, and a subscription nobody announced still counts.
	if _, err := a.Store.Pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN contactd_%' AND datname = current_database()`); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the cache to turn off", func() bool { return !a.Svc.Subscribers.Caching() })
	if _, err := a.Store.Pool.Exec(ctx, `UPDATE webhook_subscriptions SET status = 'Removed' WHERE account_id = $1`, account); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Store.Pool.Exec(ctx, `INSERT INTO webhook_subscriptions (account_id, subscription_id, url, event_type, secret, created_at, updated_at)
		VALUES ($1, $2, 'https://hooks.example.com/silent', 'TagsAdded', 'whsec_x', now(), now())`, account, uuid.Must(uuid.NewV7())); err != nil {
		t.Fatal(err)
	}
	before := deliveryCount(t, a, account)
	addTag()
	if d := deliveryCount(t, a, account); d != before+1 {
		t.Errorf("change while the cache is off: %d deliveries, want %d", d, before+1)
	}
	testkit.Eventually(t, "the listener to reconnect", a.Svc.Subscribers.Caching)
}

// TestAStalePlanIsMadeAgain: each writer plans its events' deliveries from the account's
// audience as this process remembers it, and its statement queues the plan only at the
// account's current version of its subscriptions. A subscription added while the remembered
// audience is stale (the version moved, its notification not heard: here it never comes) gets
// the next change's event all the same, on every path: a create, a tag change, a batch and an
// update through Emit.
func TestAStalePlanIsMadeAgain(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	testkit.Eventually(t, "the subscriptions cache", a.Svc.Subscribers.Caching)
	account, key := a.Account("stale")
	var template struct {
		SubscriptionId string `json:"subscriptionId"`
	}
	before := a.Svc.Subscribers.Invalidations()
	a.Do("POST", "/public/v1/webhooks", key, map[string]any{"url": "https://hooks.example.com/t", "eventType": "FormSubmission"}).JSON(t, &template)
	// the subscription's own notification reaches the cache some time after its commit (its
	// forget in this process, then the NOTIFY heard): heard before the count is taken, or it
	// would count as a change the test did not make
	testkit.Eventually(t, "the new subscription's notification heard", func() bool { return a.Svc.Subscribers.Invalidations() >= before+2 })
	id := createContact(t, a, key, map[string]any{"email": "first@example.com"}).Contact.ContactId // remembers the audience
	sneak := func(typ string) string { return a.SubscribeUnheard(t, account, template.SubscriptionId, typ) }
	forgotten := a.Svc.Subscribers.Invalidations()
	delivered := func(what, sub, eventType string) {
		t.Helper()
		if n := countRows(t, a, `SELECT count(*) FROM webhook_deliveries d JOIN webhook_events e USING (account_id, event_id)
			WHERE d.subscription_id = $1::uuid AND e.event_type = $2`, sub, eventType); n != 1 {
			t.Errorf("%s after a subscription the cache had not heard of: %d deliveries to it, want 1", what, n)
		}
	}

	sub := sneak("TagsAdded")
	createContact(t, a, key, map[string]any{"email": "second@example.com", "tags": []string{"new"}})
	delivered("a create", sub, "TagsAdded")

	sub = sneak("TagsAdded")
	tagsOf(t, a.Do("POST", "/public/v1/contact/"+id+"/tags", key, map[string]any{"tags": []string{"later"}}))
	delivered("a tag change", sub, "TagsAdded")

	sub = sneak("TagsAdded")
	if r := a.Do("POST", "/public/v1/contacts/batch", key, map[string]any{"contacts": []any{
		map[string]any{"email": "third@example.com", "tags": []string{"batch"}}}}); r.Status != 200 {
		t.Fatalf("batch: %d %s", r.Status, r.Body)
	}
	delivered("a batch", sub, "TagsAdded")

	sub = sneak("ContactDetailsUpdated")
	if r := a.Do("PATCH", "/public/v1/contact/"+id, key, map[string]any{"name": "Renamed"}); r.Status != 200 {
		t.Fatalf("patch: %d %s", r.Status, r.Body)
	}
	delivered("an update", sub, "ContactDetailsUpdated")

	if a.Svc.Subscribers.Invalidations() != forgotten {
		t.Errorf("the cache heard of a change: the test proves nothing of the version")
	}
	// the TagsAdded subscriptions added earlier got the later events too: 1 + 2 + 3, and 1
	if n := countRows(t, a, `SELECT count(*) FROM webhook_deliveries WHERE account_id = $1`, account); n != 7 {
		t.Errorf("%d deliveries in all, want 7", n)
	}
}
