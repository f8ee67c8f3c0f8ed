package testkit

import (
	"context"
	"os"
	"testing"
	"time"
)

// Patience bounds how long a test waits for something that must happen. It guards against a
// hang and is never a claim about speed: CI's two cores are shared and busy, so a test waits
// for the event itself, and a bound that is a product's claim is measured by a benchmark.
// CONTACTD_TEST_PATIENCE shortens it for the mutation test (cmd/mutate), on a machine it has
// to itself: a mutant that keeps an awaited event from happening then fails in a minute, not
// in three.
var Patience = patience()

func patience() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("CONTACTD_TEST_PATIENCE")); err == nil && d > 0 {
		return d
	}
	return 3 * time.Minute
}

// deadline is when a wait that began now gives up: Patience, or sooner when the test binary's
// own -timeout would end first (so the failure names what was awaited, not a panic dump).
func deadline(t testing.TB) time.Time {
	d := time.Now().Add(Patience)
	if dt, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if end, ok := dt.Deadline(); ok && end.Add(-10*time.Second).Before(d) {
			d = end.Add(-10 * time.Second)
		}
	}
	return d
}

// Eventually polls cond until it holds and fails the test, naming what, if it never does.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	end := deadline(t)
	for wait := time.Millisecond; !cond(); wait = min(2*wait, 50*time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("waited %v and %s never happened", Patience, what)
		}
		time.Sleep(wait)
	}
}

// DeliveriesSettled waits until no webhook delivery of the API's database is due now or held
// by a worker (a paused subscription's are never due): every attempt that could be made has
// been made and recorded. A receiver that has
// nothing in its channel then has been sent nothing, whatever the machine's speed (a worker
// pushes a request into the receiver's channel before it records the attempt).
func (a *API) DeliveriesSettled(t testing.TB) {
	t.Helper()
	Eventually(t, "the deliveries due settling", func() bool {
		var busy int
		err := a.Store.Pool.QueryRow(context.Background(), `SELECT count(*) FROM webhook_deliveries d
			JOIN webhook_subscriptions s USING (account_id, subscription_id)
			WHERE d.status = 'Pending' AND s.paused_at IS NULL
			  AND (d.leased_until IS NOT NULL OR d.next_attempt_at <= now())`).Scan(&busy)
		if err != nil {
			t.Fatalf("counting due deliveries: %v", err)
		}
		return busy == 0
	})
}

// Count runs a count query and fails the test when it fails, so that "expect zero rows" can
// never pass on a query that did not run.
func (a *API) Count(t testing.TB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := a.Store.Pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// LockWaiters is how many locks the sessions of the API's database are waiting for: a test
// that holds a row tells by it that a request has reached the row and waits.
func (a *API) LockWaiters(t testing.TB) int {
	t.Helper()
	return a.Count(t, "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity s USING (pid) WHERE NOT l.granted AND s.datname = current_database()")
}

// DeliveryWorkersLooked waits until the API's delivery workers have made a claim that began
// after this call: work that was due and claimable when it was called has been taken by then.
// Claims of one process run one after another, so the second to end after now began after now.
func (a *API) DeliveryWorkersLooked(t testing.TB) {
	t.Helper()
	after := a.Svc.Deliveries.Claims() + 2
	a.Svc.Deliveries.Wake()
	Eventually(t, "the delivery workers' next look", func() bool { return a.Svc.Deliveries.Claims() >= after })
}

// Backfill runs the segment backfills due in the API's database to the end, in the test's
// goroutine: every segment saved or edited before the call is ready after it (unless a
// worker of another process holds one's lease).
func (a *API) Backfill(t testing.TB) {
	t.Helper()
	for {
		did, err := a.Svc.Segments.BackfillOne(context.Background(), a.Svc.Contacts)
		if err != nil {
			t.Fatalf("backfill: %v", err)
		}
		if !did {
			return
		}
	}
}
