package delivery_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/delivery"
	"github.com/contactd/contactd/internal/testkit"
)

// TestBookkeepingCommitsLazily: the statements of the delivery path that only keep its books
// (claiming due deliveries, recording a success and claiming the next) turn synchronous_commit
// off for their own transaction, so their commits do not wait for the WAL flush (lost in a crash, the delivery
// is made again); the change that queued the delivery did wait.
func TestBookkeepingCommitsLazily(t *testing.T) {
	t.Parallel()
	s := newSetup(t, false)
	s.addTags(t, "lazy@example.com", "x")
	ctx := context.Background()
	var account, id, sub uuid.UUID
	if err := s.a.Store.Pool.QueryRow(ctx, `SELECT account_id, delivery_id, subscription_id FROM webhook_deliveries`).Scan(&account, &id, &sub); err != nil {
		t.Fatal(err)
	}
	// the test cluster commits lazily throughout: this connection commits as production does
	conn, err := s.a.Store.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SET synchronous_commit = on"); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(ctx, "RESET synchronous_commit") //nolint:errcheck // back to the pool's default
	now := time.Now()
	for name, statement := range map[string]func(q *db.Queries) error{
		// as the queue sends them: each after the claims' settings (store.Pipelined)
		"DeliveryClaim": func(q *db.Queries) error {
			if err := q.DeliveryClaimSettings(ctx); err != nil {
				return err
			}
			if err := q.DeliveryClaimLock(ctx); err != nil {
				return err
			}
			rows, err := q.DeliveryClaim(ctx, db.DeliveryClaimParams{Now: now, LeaseUntil: now.Add(time.Minute), Max: 4, MaxInFlight: 4, ThrottleShare: 0.25})
			if err == nil && len(rows) != 1 {
				t.Errorf("DeliveryClaim leased %d deliveries, want the one", len(rows))
			}
			return err
		},
		"DeliverySucceedMany": func(q *db.Queries) error {
			if err := q.DeliveryClaimSettings(ctx); err != nil {
				return err
			}
			_, err := testkit.DeliverySucceed(ctx, q, delivery.Success{AccountID: account, DeliveryID: id,
				SubscriptionID: sub, Attempt: 1, Now: now, ResponseStatus: ptr(int32(204)), LatencyMs: 1})
			return err
		},
	} {
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := statement(db.New(tx)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var setting string
		if err := tx.QueryRow(ctx, "SHOW synchronous_commit").Scan(&setting); err != nil {
			t.Fatal(err)
		}
		if setting != "off" {
			t.Errorf("%s leaves synchronous_commit %s in its transaction, want off", name, setting)
		}
		if err := tx.Rollback(ctx); err != nil && err != pgx.ErrTxClosed {
			t.Fatal(err)
		}
	}
	var setting string
	if err := conn.QueryRow(ctx, "SHOW synchronous_commit").Scan(&setting); err != nil || setting != "on" {
		t.Errorf("after the transactions the connection has synchronous_commit %q (%v), want on again", setting, err)
	}
}

func ptr[T any](v T) *T { return &v }
