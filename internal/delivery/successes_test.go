package delivery_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/contactd/contactd/internal/delivery"
	"github.com/contactd/contactd/internal/testkit"
)

// TestSuccessesFinishingAtOnceAreRecordedTogether: the successes of workers finishing at once
// are recorded in one transaction, and each worker gets its own subscription's next due
// delivery, answered in the order asked: two workers of one receiver swap their two leases for
// the next two deliveries, not the same one.
func TestSuccessesFinishingAtOnceAreRecordedTogether(t *testing.T) {
	t.Parallel()
	s := newSetup(t, false)
	ctx := context.Background()
	pool := s.a.Store.Pool
	rc2 := testkit.NewReceiver(t)
	if r := s.a.Do("POST", "/public/v1/webhooks", s.key, map[string]any{"url": rc2.URL, "eventType": "TagsAdded"}); r.Status != 200 {
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
		ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		if err != nil || len(ids) != 4 {
			t.Fatalf("subscription %s has %d deliveries (%v), want 4", sub, len(ids), err)
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
		{Account: account, Delivery: b[0], Subscription: subB, URL: rc2.URL},
		{Account: account, Delivery: a[1], Subscription: subA, URL: s.rc.URL},
		{Account: account, Delivery: a[0], Subscription: subA, URL: s.rc.URL},
	})
	if err != nil {
		t.Fatal(err)
	}
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
