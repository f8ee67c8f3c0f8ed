package delivery_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/delivery"
	"github.com/contactd/contactd/internal/testkit"
)

// TestAttemptsGoWithTheirDelivery: webhook_attempts has no foreign key to its delivery
// (migration 00039), so an attempt is recorded only from its delivery's row, success or
// failure, and nothing of a delivery deleted meanwhile is recorded (neither the attempt nor
// the subscription's health); and a statement that deletes deliveries takes their attempts
// with it (the trigger), leaving the others'.
func TestAttemptsGoWithTheirDelivery(t *testing.T) {
	t.Parallel()
	s := newSetup(t, false)
	s.addTags(t, "attempts-1@example.com", "x")
	s.addTags(t, "attempts-2@example.com", "x")
	ctx := context.Background()
	pool := s.a.Store.Pool
	q := db.New(pool)
	var account, sub uuid.UUID
	var deliveries []uuid.UUID
	rows, err := pool.Query(ctx, `SELECT account_id, subscription_id, delivery_id FROM webhook_deliveries ORDER BY delivery_id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var d uuid.UUID
		if err := rows.Scan(&account, &sub, &d); err != nil {
			t.Fatal(err)
		}
		deliveries = append(deliveries, d)
	}
	if rows.Err() != nil || len(deliveries) != 2 {
		t.Fatalf("deliveries %v (%v), want the two creates'", deliveries, rows.Err())
	}
	now := time.Now()
	success := func(id uuid.UUID) {
		t.Helper()
		if _, err := testkit.DeliverySucceed(ctx, q, delivery.Success{AccountID: account, SubscriptionID: sub,
			DeliveryID: id, Attempt: 1, Now: now, ResponseStatus: ptr(int32(204)), LatencyMs: 1}); err != nil {
			t.Fatal(err)
		}
	}
	failure := func(delivery uuid.UUID) {
		t.Helper()
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx) //nolint:errcheck // after a commit
		qt := db.New(tx)
		if err := qt.DeliveryRecordAttempt(ctx, db.DeliveryRecordAttemptParams{AccountID: account, DeliveryID: delivery,
			Attempt: 2, Status: "Failed", Now: now}); err != nil {
			t.Fatal(err)
		}
		if err := qt.AttemptInsert(ctx, db.AttemptInsertParams{AccountID: account, DeliveryID: delivery, Attempt: 2,
			AttemptedAt: now, ResponseStatus: ptr(int32(500)), LatencyMs: 1}); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	attempts := func() (n int, lastSuccess *time.Time) {
		t.Helper()
		if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM webhook_attempts),
			(SELECT last_success_at FROM webhook_subscriptions WHERE subscription_id = $1)`, sub).Scan(&n, &lastSuccess); err != nil {
			t.Fatal(err)
		}
		return n, lastSuccess
	}

	// of a delivery that is gone: nothing
	gone := uuid.New()
	success(gone)
	failure(gone)
	if n, last := attempts(); n != 0 || last != nil {
		t.Fatalf("recorded of a delivery that is not there: %d attempts, last success %v; want none", n, last)
	}
	// of those that are there: each its attempts, and the success the subscription's
	for _, d := range deliveries {
		success(d)
		failure(d)
	}
	if n, last := attempts(); n != 4 || last == nil {
		t.Fatalf("recorded: %d attempts, last success %v; want 4 and the success", n, last)
	}
	// a delete takes its deliveries' attempts, not the others' (the event goes too, as the
	// retention prunes both)
	if _, err := pool.Exec(ctx, `WITH gone AS (DELETE FROM webhook_deliveries WHERE delivery_id = $1 RETURNING account_id, event_id)
		DELETE FROM webhook_events e USING gone WHERE e.account_id = gone.account_id AND e.event_id = gone.event_id`, deliveries[0]); err != nil {
		t.Fatal(err)
	}
	var left []uuid.UUID
	rows, err = pool.Query(ctx, `SELECT DISTINCT delivery_id FROM webhook_attempts`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var d uuid.UUID
		if err := rows.Scan(&d); err != nil {
			t.Fatal(err)
		}
		left = append(left, d)
	}
	if rows.Err() != nil || len(left) != 1 || left[0] != deliveries[1] {
		t.Fatalf("attempts left of %v (%v), want only those of %v", left, rows.Err(), deliveries[1])
	}
}
