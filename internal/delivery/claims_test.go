package delivery_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/testkit"
)

// TestClaimsExcludeEachOther: a worker's next claim for a receiver never waits and takes
// nothing while the dispatcher claims, or while another claim for the same receiver runs,
// whether that claim is this release's or the previous release's function (both run during a
// rollout); it takes nothing past the receiver's in-flight cap either, and otherwise the
// receiver's oldest due delivery. The dispatcher's claim waits for the previous release's.
func TestClaimsExcludeEachOther(t *testing.T) {
	t.Parallel()
	s := newSetup(t, false)
	s.addTags(t, "claims-1@example.com", "x")
	s.addTags(t, "claims-2@example.com", "x")
	ctx := context.Background()
	pool := s.a.Store.Pool
	var account, sub uuid.UUID
	if err := pool.QueryRow(ctx, `SELECT account_id, subscription_id FROM webhook_deliveries LIMIT 1`).Scan(&account, &sub); err != nil {
		t.Fatal(err)
	}
	// a receiver that has succeeded before gets MaxInFlight attempts at once, not one
	if _, err := pool.Exec(ctx, `UPDATE webhook_subscriptions SET last_success_at = now()`); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	claimNext := func(maxInFlight int32) int {
		t.Helper()
		var rows []db.DeliveryClaimNextRow
		err := s.a.Store.Pipelined(ctx, func(q *db.Queries) (err error) {
			if err = q.DeliveryClaimNextLock(ctx, db.DeliveryClaimNextLockParams{AccountID: account, SubscriptionID: sub}); err != nil {
				return err
			}
			rows, err = q.DeliveryClaimNext(ctx, db.DeliveryClaimNextParams{AccountID: account, SubscriptionID: sub,
				Now: now, LeaseUntil: now.Add(time.Minute), MaxInFlight: maxInFlight})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return len(rows)
	}
	// holding runs sql in a transaction of its own connection, left open until the test is done
	// with it (the locks it took held meanwhile)
	holding := func(sql string, args ...any) (release func()) {
		t.Helper()
		conn, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := tx.Query(ctx, sql, args...)
		if err != nil {
			t.Fatal(err)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return func() {
			if err := tx.Rollback(ctx); err != nil && err != pgx.ErrTxClosed {
				t.Error(err)
			}
			conn.Release()
		}
	}

	// (the previous release's functions, called an hour in the past, lease nothing: they only lock)
	for _, held := range []struct {
		what, sql string
		args      []any
	}{
		{"this release's dispatcher claim", `SELECT pg_advisory_xact_lock(hashtextextended('contactd.claim_deliveries', 0))`, nil},
		{"the previous release's dispatcher claim", `SELECT * FROM claim_deliveries_alone(now() - interval '1 hour', now(), 1, 4, 0.25)`, nil},
		{"another worker's claim for this receiver", `SELECT pg_advisory_xact_lock(hashtextextended('contactd.claim_next/' || url, 0)) FROM webhook_subscriptions`, nil},
		{"the previous release's worker claim for this receiver", `SELECT * FROM claim_next_delivery($1, $2, now() - interval '1 hour', now(), 4)`, []any{account, sub}},
	} {
		release := holding(held.sql, held.args...)
		if n := claimNext(4); n != 0 {
			t.Errorf("while %s runs, a worker's claim took %d deliveries, want none", held.what, n)
		}
		release()
	}

	// the previous release's dispatcher claim, open: this release's waits for it
	release := holding(`SELECT * FROM claim_deliveries_alone(now() - interval '1 hour', now(), 1, 4, 0.25)`)
	claimed := make(chan int, 1)
	go func() {
		var rows []db.DeliveryClaimRow
		err := s.a.Store.Pipelined(ctx, func(q *db.Queries) (err error) {
			if err = q.DeliveryClaimLock(ctx); err != nil {
				return err
			}
			rows, err = q.DeliveryClaim(ctx, db.DeliveryClaimParams{Now: now, LeaseUntil: now.Add(time.Minute), Max: 1,
				MaxInFlight: 1, ThrottleShare: 0.25})
			return err
		})
		if err != nil {
			t.Error(err)
		}
		claimed <- len(rows)
	}()
	waitLockWaiter(t, s)
	release()
	if n := <-claimed; n != 1 {
		t.Fatalf("the dispatcher's claim after the previous release's took %d deliveries, want 1", n)
	}

	// one lease held now: with a cap of 1 a worker's claim takes nothing, with 4 the next one
	if n := claimNext(1); n != 0 {
		t.Errorf("at the receiver's cap of 1, a worker's claim took %d deliveries", n)
	}
	if n := claimNext(4); n != 1 {
		t.Errorf("below the receiver's cap, a worker's claim took %d deliveries, want the second one", n)
	}
	if n := claimNext(4); n != 0 {
		t.Errorf("with nothing left due, a worker's claim took %d deliveries", n)
	}
}

// waitLockWaiter waits until a backend of the test's database waits for an advisory lock.
func waitLockWaiter(t *testing.T, s *setup) {
	t.Helper()
	ctx := context.Background()
	testkit.Eventually(t, "a claim waiting for the dispatcher's lock", func() bool {
		var waiting bool
		if err := s.a.Store.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks
			WHERE locktype = 'advisory' AND NOT granted
			  AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		return waiting
	})
}
