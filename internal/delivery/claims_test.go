package delivery_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/testkit"
)

// TestClaimsExcludeEachOther: a worker's next claim for a receiver waits while the dispatcher
// claims, then takes the receiver's oldest due delivery; it runs
// beside this release's other worker claims for the receiver, each of which swaps a lease for
// the next; it takes nothing past the receiver's in-flight cap.
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
	claimNext := func(maxInFlight int32) (int, error) {
		var rows []db.DeliveryClaimNextRow
		err := s.a.Store.Pipelined(ctx, func(q *db.Queries) (err error) {
			if err = claimNextLocks(ctx, q, account, sub); err != nil {
				return err
			}
			rows, err = q.DeliveryClaimNext(ctx, db.DeliveryClaimNextParams{AccountID: account, SubscriptionID: sub,
				Now: now, LeaseUntil: now.Add(time.Minute), MaxInFlight: maxInFlight})
			return err
		})
		return len(rows), err
	}
	unlease := func() {
		t.Helper()
		if _, err := pool.Exec(ctx, `UPDATE webhook_deliveries SET leased_until = NULL, next_attempt_at = $1`, now.Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
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

	for _, held := range []struct {
		what, sql string
		args      []any
	}{
		{"this release's dispatcher claim", `SELECT pg_advisory_xact_lock(hashtextextended('contactd.claim_deliveries', 0))`, nil},
	} {
		release := holding(held.sql, held.args...)
		claimed := make(chan int, 1)
		go func() {
			n, err := claimNext(4)
			if err != nil {
				t.Error(err)
			}
			claimed <- n
		}()
		waitLockWaiter(t, s)
		release()
		if n := <-claimed; n != 1 {
			t.Errorf("after %s, a worker's claim took %d deliveries, want the oldest due", held.what, n)
		}
		unlease()
	}

	// this release's other worker claim for this receiver, open: this one goes on beside it
	release := holding(`SELECT pg_advisory_xact_lock_shared(hashtextextended('contactd.claim_deliveries', 0)),
		pg_advisory_xact_lock_shared(hashtextextended('contactd.claim_next/' || url, 0)) FROM webhook_subscriptions`)
	if n, err := claimNext(4); err != nil || n != 1 {
		t.Errorf("beside another worker's claim for this receiver, a worker's claim took %d deliveries (%v), want the oldest due", n, err)
	}
	release()
	unlease()

	// another dispatcher's claim, open: this one waits for it, then takes one
	release = holding(`SELECT pg_advisory_xact_lock(hashtextextended('contactd.claim_deliveries', 0))`)
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
		t.Fatalf("the dispatcher's claim after another's took %d deliveries, want 1", n)
	}

	// one lease held now: with a cap of 1 a worker's claim takes nothing, with 4 the next one
	for _, c := range []struct {
		cap  int32
		want int
		what string
	}{{1, 0, "at the receiver's cap of 1"}, {4, 1, "below the receiver's cap (the second delivery)"}, {4, 0, "with nothing left due"}} {
		if n, err := claimNext(c.cap); err != nil || n != c.want {
			t.Errorf("%s, a worker's claim took %d deliveries (%v), want %d", c.what, n, err, c.want)
		}
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

// A worker's claim waits for a dispatcher's claim at most lock_timeout (1 s): a dispatcher's
// claim stuck behind a lock (its lock held open here) cannot keep the workers' connections,
// which the API's requests share. The claim fails; the worker then records its success alone.
func TestAWorkersWaitForTheDispatcherIsBounded(t *testing.T) {
	t.Parallel()
	s := newSetup(t, false)
	s.addTags(t, "bounded@example.com", "x")
	ctx := context.Background()
	pool := s.a.Store.Pool
	var account, sub uuid.UUID
	if err := pool.QueryRow(ctx, `SELECT account_id, subscription_id FROM webhook_deliveries`).Scan(&account, &sub); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // only held
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('contactd.claim_deliveries', 0))`); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	err = s.a.Store.Pipelined(ctx, func(q *db.Queries) error { // as the queue sends them: the batch goes with the claim
		if err := claimNextLocks(ctx, q, account, sub); err != nil {
			return err
		}
		_, err := q.DeliveryClaimNext(ctx, db.DeliveryClaimNextParams{AccountID: account, SubscriptionID: sub,
			Now: now, LeaseUntil: now.Add(time.Minute), MaxInFlight: 4})
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "lock timeout") {
		t.Fatalf("a worker's claim behind a dispatcher's held open: %v, want the lock timeout", err)
	}
}

// claimNextLocks takes a worker's claim locks as recordAndClaimNext does, in the statement that
// records its success (DeliveryRecordSuccess with ClaimNext): here the success of no delivery,
// which records nothing.
func claimNextLocks(ctx context.Context, q *db.Queries, account, sub uuid.UUID) error {
	now := time.Now()
	return q.DeliveryRecordSuccess(ctx, db.DeliveryRecordSuccessParams{AccountID: account, SubscriptionID: sub,
		DeliveryID: uuid.Nil, ClaimNext: true, Attempt: 1, Now: &now, RefreshBefore: &now, ResponseStatus: nil, LatencyMs: 1})
}
