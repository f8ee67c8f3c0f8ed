package delivery_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/delivery"
	"github.com/contactd/contactd/internal/testkit"
)

// TestSuccessesFinishingAtOnceAreRecordedTogether: the successes of workers finishing at once
// are recorded in one transaction, and each worker gets its own subscription's oldest due
// delivery next, counted after the successes before it in the group: two workers of one
// receiver swap their two leases for the next two deliveries, not the same one.
func TestSuccessesFinishingAtOnceAreRecordedTogether(t *testing.T) {
	t.Parallel()
	s := newSetup(t, false)
	ctx := context.Background()
	pool := s.a.Store.Pool
	rc2 := testkit.NewReceiver(t)
	r := s.a.Do("POST", "/public/v1/webhooks", s.key, map[string]any{"url": rc2.URL, "eventType": "TagsAdded"})
	if r.Status != 200 {
		t.Fatalf("subscribe: %d %s", r.Status, r.Body)
	}
	for _, email := range []string{"t1@example.com", "t2@example.com", "t3@example.com", "t4@example.com"} {
		s.addTags(t, email, "x")
	}
	// both receivers have succeeded before: each may have MaxInFlight attempts at once
	if _, err := pool.Exec(ctx, `UPDATE webhook_subscriptions SET last_success_at = now()`); err != nil {
		t.Fatal(err)
	}
	var account, subA, subB uuid.UUID
	if err := pool.QueryRow(ctx, `SELECT account_id, subscription_id FROM webhook_subscriptions WHERE url = $1`, s.rc.URL).Scan(&account, &subA); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `SELECT subscription_id FROM webhook_subscriptions WHERE url = $1`, rc2.URL).Scan(&subB); err != nil {
		t.Fatal(err)
	}
	// each subscription's deliveries, oldest due first
	due := func(sub uuid.UUID) []uuid.UUID {
		t.Helper()
		rows, err := pool.Query(ctx, `SELECT delivery_id FROM webhook_deliveries WHERE subscription_id = $1 ORDER BY next_attempt_at, delivery_id`, sub)
		if err != nil {
			t.Fatal(err)
		}
		var ids []uuid.UUID
		for rows.Next() {
			var id uuid.UUID
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if len(ids) != 4 {
			t.Fatalf("subscription %s has %d deliveries, want 4", sub, len(ids))
		}
		return ids
	}
	a, b := due(subA), due(subB)
	// three workers hold the two oldest of A and the oldest of B
	if _, err := pool.Exec(ctx, `UPDATE webhook_deliveries SET leased_until = now() + interval '1 minute',
		next_attempt_at = now() + interval '1 minute' WHERE delivery_id = ANY($1)`, []uuid.UUID{a[0], a[1], b[0]}); err != nil {
		t.Fatal(err)
	}

	next, err := s.a.Svc.Deliveries.RecordSuccessesTogether(ctx, []delivery.Leased{
		{Account: account, Delivery: b[0], Subscription: subB},
		{Account: account, Delivery: a[1], Subscription: subA},
		{Account: account, Delivery: a[0], Subscription: subA},
	})
	if err != nil {
		t.Fatal(err)
	}
	// the group ran its pairs in subscription order, and answered each in the order asked
	wantA := map[uuid.UUID]bool{a[2]: true, a[3]: true}
	if next[0] != b[1] {
		t.Errorf("the worker of B claimed %s, want B's next due %s", next[0], b[1])
	}
	if !wantA[next[1]] || !wantA[next[2]] || next[1] == next[2] {
		t.Errorf("the two workers of A claimed %s and %s, want A's two next due, %s and %s", next[1], next[2], a[2], a[3])
	}
	var succeeded, transactions, leasedA, leasedB int
	if err := pool.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM webhook_deliveries WHERE delivery_id = ANY($1) AND status = 'Succeeded' AND attempts = 1 AND leased_until IS NULL),
			(SELECT count(DISTINCT xmin::text) FROM webhook_attempts WHERE delivery_id = ANY($1) AND attempt = 1 AND response_status = 204),
			(SELECT count(*) FROM webhook_deliveries WHERE subscription_id = $2 AND leased_until IS NOT NULL),
			(SELECT count(*) FROM webhook_deliveries WHERE subscription_id = $3 AND leased_until IS NOT NULL)`,
		[]uuid.UUID{a[0], a[1], b[0]}, subA, subB).Scan(&succeeded, &transactions, &leasedA, &leasedB); err != nil {
		t.Fatal(err)
	}
	if succeeded != 3 || transactions != 1 {
		t.Errorf("%d of the 3 successes recorded, their attempts written by %d transactions: want 3 in 1", succeeded, transactions)
	}
	if leasedA != 2 || leasedB != 1 {
		t.Errorf("after the group, A holds %d leases and B %d: each worker swaps its lease for one (want 2 and 1)", leasedA, leasedB)
	}
}

// TestAWorkersClaimBesideAnOpenDispatcherClaimKeepsTheCap: a worker's claim does not wait for a
// dispatcher's, and the two together never pass the receiver's cap. The receiver (cap 4)
// holds two workers' leases; a dispatcher's claim, still open, takes the two left free; one
// worker then succeeds and claims its next delivery without seeing them: it swaps its lease
// for one, so once both commit the receiver holds 4, the dispatcher's two not taken twice.
func TestAWorkersClaimBesideAnOpenDispatcherClaimKeepsTheCap(t *testing.T) {
	t.Parallel()
	s := newSetup(t, false)
	ctx := context.Background()
	pool := s.a.Store.Pool
	for i := range 6 {
		s.addTags(t, fmt.Sprintf("cap-%d@example.com", i), "x")
	}
	if _, err := pool.Exec(ctx, `UPDATE webhook_subscriptions SET last_success_at = now()`); err != nil {
		t.Fatal(err)
	}
	var account, sub uuid.UUID
	if err := pool.QueryRow(ctx, `SELECT account_id, subscription_id FROM webhook_subscriptions`).Scan(&account, &sub); err != nil {
		t.Fatal(err)
	}
	var held []uuid.UUID
	rows, err := pool.Query(ctx, `UPDATE webhook_deliveries SET leased_until = now() + interval '1 minute', next_attempt_at = now() + interval '1 minute'
		WHERE delivery_id IN (SELECT delivery_id FROM webhook_deliveries ORDER BY next_attempt_at, delivery_id LIMIT 2) RETURNING delivery_id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id uuid.UUID
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		held = append(held, id)
	}
	if err := rows.Err(); err != nil || len(held) != 2 {
		t.Fatalf("leased %d deliveries (%v), want 2", len(held), err)
	}

	dispatcher, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer dispatcher.Rollback(ctx) //nolint:errcheck // committed below; a rollback after is a no-op
	q := db.New(dispatcher)
	if err := q.DeliveryClaimLock(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	claimed, err := q.DeliveryClaim(ctx, db.DeliveryClaimParams{Now: now, LeaseUntil: now.Add(time.Minute), Max: 10, MaxInFlight: 4, ThrottleShare: 0.25})
	if err != nil || len(claimed) != 2 {
		t.Fatalf("the dispatcher's claim took %d deliveries (%v), want the 2 the receiver has room for", len(claimed), err)
	}

	next, err := s.a.Svc.Deliveries.RecordSuccessesTogether(ctx, []delivery.Leased{{Account: account, Delivery: held[0], Subscription: sub}})
	if err != nil {
		t.Fatal(err)
	}
	if next[0] == uuid.Nil || next[0] == claimed[0].DeliveryID || next[0] == claimed[1].DeliveryID {
		t.Errorf("the worker claimed %s beside the dispatcher's %s and %s, want a third delivery", next[0], claimed[0].DeliveryID, claimed[1].DeliveryID)
	}
	if err := dispatcher.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var leases int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE leased_until > now()`).Scan(&leases); err != nil {
		t.Fatal(err)
	}
	if leases != 4 {
		t.Errorf("the receiver holds %d leases after both claims, want its cap of 4", leases)
	}
}

// TestAWorkerGoesOnOnlyWhileItsLeaseIsLive: a worker goes on to its receiver's next delivery
// only while its lease is live for an attempt's timeout more; a claim may have counted a lease
// that ended as gone, and a worker going on then would add one to the receiver's count.
func TestAWorkerGoesOnOnlyWhileItsLeaseIsLive(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t, testkit.LocalDelivery, func(c *testkit.Config) { c.WebhookTimeout, c.WebhookRescueAfter = 10*time.Second, time.Minute })
	now := time.Now()
	for _, c := range []struct {
		ends time.Time
		want bool
	}{{now.Add(time.Minute), true}, {now.Add(9 * time.Second), false}, {now.Add(-time.Second), false}, {time.Time{}, false}} {
		if got := a.Svc.Deliveries.LeaseLeft(c.ends); got != c.want {
			t.Errorf("a lease ending in %v: goes on %v, want %v", time.Until(c.ends).Round(time.Second), got, c.want)
		}
	}
}
