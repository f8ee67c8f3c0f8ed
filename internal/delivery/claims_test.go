package delivery_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/config"
	"github.com/contactd/contactd/internal/delivery"
	"github.com/contactd/contactd/internal/testkit"
)

// TestDispatcherClaimsExcludeEachOther: a dispatcher's claim waits while another dispatcher's
// claim is open, of this release or of the previous one (whose workers take the lock shared),
// then takes what the receiver has room for.
func TestDispatcherClaimsExcludeEachOther(t *testing.T) {
	t.Parallel()
	s := newSetup(t, false)
	s.addTags(t, "claims-1@example.com", "x")
	ctx := context.Background()
	pool := s.a.Store.Pool
	now := time.Now()
	for _, held := range []struct{ what, sql string }{
		{"another dispatcher's claim", `SELECT pg_advisory_xact_lock(hashtextextended('contactd.claim_deliveries', 0))`},
		{"the previous release's worker claim", `SELECT pg_advisory_xact_lock_shared(hashtextextended('contactd.claim_deliveries', 0))`},
	} {
		release := holding(t, pool, held.sql)
		claimed := make(chan int, 1)
		go func() {
			var rows []db.DeliveryClaimRow
			err := s.a.Store.Pipelined(ctx, func(q *db.Queries) (err error) {
				if err = q.DeliveryClaimSettings(ctx); err != nil {
					return err
				}
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
			t.Fatalf("the dispatcher's claim after %s took %d deliveries, want 1", held.what, n)
		}
		if _, err := pool.Exec(ctx, `UPDATE webhook_deliveries SET leased_until = NULL, next_attempt_at = $1`, now.Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
}

// holding runs sql in a transaction of its own connection, left open until the test calls the
// function it returns (the locks it took held meanwhile).
func holding(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) (release func()) {
	t.Helper()
	ctx := context.Background()
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

// leaseOldest leases the n oldest due deliveries for a minute, as claims do, and returns them.
func leaseOldest(t *testing.T, pool *pgxpool.Pool, n int) []uuid.UUID {
	t.Helper()
	rows, err := pool.Query(context.Background(), `UPDATE webhook_deliveries SET leased_until = now() + interval '1 minute',
		next_attempt_at = now() + interval '1 minute'
		WHERE delivery_id IN (SELECT delivery_id FROM webhook_deliveries WHERE status = 'Pending' AND leased_until IS NULL
		                      ORDER BY next_attempt_at, delivery_id LIMIT $1)
		RETURNING delivery_id`, n)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil || len(ids) != n {
		t.Fatalf("leased %d deliveries (%v), want %d", len(ids), err, n)
	}
	return ids
}

// deliveriesToTheReceiver creates n contacts tagged (a delivery each to the setup's receiver,
// their emails starting with prefix), and returns the account, the subscription and its URL.
func (s *setup) deliveriesToTheReceiver(t *testing.T, prefix string, n int) (account, sub uuid.UUID, url string) {
	t.Helper()
	for i := range n {
		s.addTags(t, fmt.Sprintf("%s-%d@example.com", prefix, i), "x")
	}
	if err := s.a.Store.Pool.QueryRow(context.Background(), `SELECT account_id, subscription_id, url FROM webhook_subscriptions`).
		Scan(&account, &sub, &url); err != nil {
		t.Fatal(err)
	}
	return account, sub, url
}

// deliveriesToAHealthyReceiver is deliveriesToTheReceiver with the receiver having succeeded
// before, so that a worker may go on to its next delivery.
func (s *setup) deliveriesToAHealthyReceiver(t *testing.T, prefix string, n int) (account, sub uuid.UUID, url string) {
	t.Helper()
	account, sub, url = s.deliveriesToTheReceiver(t, prefix, n)
	if _, err := s.a.Store.Pool.Exec(context.Background(), `UPDATE webhook_subscriptions SET last_success_at = now()`); err != nil {
		t.Fatal(err)
	}
	return account, sub, url
}

// TestAWorkersClaimBesideAnOpenDispatcherClaimKeepsTheCap: a worker's claim takes no lock, and
// it and a dispatcher's claim together never pass the receiver's cap. The receiver (cap 4)
// holds two workers' leases; a dispatcher's claim, still open, takes the two left free; one
// worker then succeeds and claims its next delivery without seeing them: it swaps its lease
// for one, so once both claims commit the receiver holds 4, the dispatcher's two not taken
// twice.
func TestAWorkersClaimBesideAnOpenDispatcherClaimKeepsTheCap(t *testing.T) {
	t.Parallel()
	s := newSetup(t, false)
	ctx := context.Background()
	pool := s.a.Store.Pool
	account, sub, url := s.deliveriesToAHealthyReceiver(t, "cap", 6)
	held := leaseOldest(t, pool, 2)

	dispatcher, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer dispatcher.Rollback(ctx) //nolint:errcheck // committed below; a rollback after is a no-op
	q := db.New(dispatcher)
	if err := q.DeliveryClaimSettings(ctx); err != nil {
		t.Fatal(err)
	}
	if err := q.DeliveryClaimLock(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	claimed, err := q.DeliveryClaim(ctx, db.DeliveryClaimParams{Now: now, LeaseUntil: now.Add(time.Minute), Max: 10, MaxInFlight: 4, ThrottleShare: 0.25})
	if err != nil || len(claimed) != 2 {
		t.Fatalf("the dispatcher's claim took %d deliveries (%v), want the 2 the receiver has room for", len(claimed), err)
	}
	next, err := s.a.Svc.Deliveries.SucceedAndClaimNext(ctx, account, held[0], sub, url)
	if err != nil {
		t.Fatal(err)
	}
	if next == uuid.Nil || next == claimed[0].DeliveryID || next == claimed[1].DeliveryID || next == held[1] {
		t.Errorf("the worker claimed %s beside the dispatcher's %s and %s, want a third delivery", next, claimed[0].DeliveryID, claimed[1].DeliveryID)
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

// TestAWorkerGoesOnOnlyWhileItMay: after its success, a worker takes its subscription's oldest
// due delivery only while its swap keeps the receiver's count: not when the subscription's URL
// changed since the lease was counted, nor when the receiver's room is one attempt (a failure
// since, or no success before), nor for a throttled or held-back subscription; and nothing
// when nothing is due. Its success is recorded in every case.
func TestAWorkerGoesOnOnlyWhileItMay(t *testing.T) {
	t.Parallel()
	s := newSetup(t, false)
	ctx := context.Background()
	pool := s.a.Store.Pool
	account, sub, url := s.deliveriesToTheReceiver(t, "may", 3)
	for _, c := range []struct {
		what, change string
		goesOn       bool
		beside       string // held open meanwhile
	}{
		{"a healthy subscription", ``, true, ``},
		{"beside the previous release's worker claim for the receiver, open", ``, true,
			`SELECT pg_advisory_xact_lock_shared(hashtextextended('contactd.claim_deliveries', 0)),
				pg_advisory_xact_lock_shared(hashtextextended('contactd.claim_next/' || url, 0)) FROM webhook_subscriptions`},
		{"its URL changed", `UPDATE webhook_subscriptions SET url = url || '?moved'`, false, ``},
		{"a failure since", `UPDATE webhook_subscriptions SET consecutive_failures = 1`, false, ``},
		{"no success before", `UPDATE webhook_subscriptions SET last_success_at = NULL`, false, ``},
		{"throttled", `UPDATE webhook_subscriptions SET max_per_second = 10`, false, ``},
		{"held back", `UPDATE webhook_subscriptions SET next_send_at = now() + interval '1 minute'`, false, ``},
		{"nothing due", `UPDATE webhook_deliveries SET next_attempt_at = now() + interval '1 hour' WHERE leased_until IS NULL`, false, ``},
	} {
		if _, err := pool.Exec(ctx, `UPDATE webhook_deliveries SET status = 'Pending', attempts = 0, leased_until = NULL,
				next_attempt_at = created_at - interval '1 hour';
			DELETE FROM webhook_attempts`); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `UPDATE webhook_subscriptions SET url = $1, consecutive_failures = 0, last_success_at = now(),
				max_per_second = NULL, next_send_at = NULL`, url); err != nil {
			t.Fatal(err)
		}
		mine := leaseOldest(t, pool, 1)[0]
		var oldest uuid.UUID
		if err := pool.QueryRow(ctx, `SELECT delivery_id FROM webhook_deliveries WHERE leased_until IS NULL
			ORDER BY next_attempt_at, delivery_id LIMIT 1`).Scan(&oldest); err != nil {
			t.Fatal(err)
		}
		if c.change != "" {
			if _, err := pool.Exec(ctx, c.change); err != nil {
				t.Fatal(err)
			}
		}
		release := func() {}
		if c.beside != "" {
			release = holding(t, pool, c.beside)
		}
		next, err := s.a.Svc.Deliveries.SucceedAndClaimNext(ctx, account, mine, sub, url)
		release()
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		switch {
		case c.goesOn && next != oldest:
			t.Errorf("%s: the worker claimed %s, want the oldest due, %s", c.what, next, oldest)
		case !c.goesOn && next != uuid.Nil:
			t.Errorf("%s: the worker claimed %s, want none", c.what, next)
		}
		var status string
		var attempts, leases int
		if err := pool.QueryRow(ctx, `SELECT status, (SELECT count(*) FROM webhook_attempts WHERE delivery_id = $1),
				(SELECT count(*) FROM webhook_deliveries WHERE leased_until IS NOT NULL)
			FROM webhook_deliveries WHERE delivery_id = $1`, mine).Scan(&status, &attempts, &leases); err != nil {
			t.Fatal(err)
		}
		wantLeases := 0
		if c.goesOn {
			wantLeases = 1
		}
		if status != "Succeeded" || attempts != 1 || leases != wantLeases {
			t.Errorf("%s: the worker's delivery %s with %d attempts, %d leases held; want Succeeded, 1, %d", c.what, status, attempts, leases, wantLeases)
		}
	}
}

// TestWorkersThatFinishTogetherAreRecordedTogether: the successes of workers that finish
// together are written in one transaction, and each worker going on claims a delivery of its
// own, two workers of one receiver too (the second's look sees the first's claim).
func TestWorkersThatFinishTogetherAreRecordedTogether(t *testing.T) {
	t.Parallel()
	s := newSetup(t, false)
	ctx := context.Background()
	pool := s.a.Store.Pool
	account, sub, url := s.deliveriesToAHealthyReceiver(t, "together", 5)
	held := leaseOldest(t, pool, 2)
	next, err := s.a.Svc.Deliveries.SucceedTogether(ctx, account, sub, url, held)
	if err != nil {
		t.Fatal(err)
	}
	if len(next) != 2 || next[0] == uuid.Nil || next[1] == uuid.Nil || next[0] == next[1] ||
		slices.Contains(held, next[0]) || slices.Contains(held, next[1]) {
		t.Fatalf("the two workers holding %v claimed %v, want two other deliveries, one each", held, next)
	}
	var succeeded, leased, attempts, transactions int
	if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'Succeeded' AND delivery_id = ANY($1)),
			count(*) FILTER (WHERE status = 'Pending' AND leased_until > now() AND delivery_id = ANY($2)),
			(SELECT count(*) FROM webhook_attempts WHERE delivery_id = ANY($1)),
			count(DISTINCT xmin::text) FILTER (WHERE delivery_id = ANY($1 || $2))
		FROM webhook_deliveries`, held, next).Scan(&succeeded, &leased, &attempts, &transactions); err != nil {
		t.Fatal(err)
	}
	if succeeded != 2 || leased != 2 || attempts != 2 || transactions != 1 {
		t.Errorf("%d Succeeded, %d claimed leased, %d attempts, written by %d transactions; want 2, 2, 2, 1", succeeded, leased, attempts, transactions)
	}
}

// TestWorkersOfAGroupNeverShareADelivery: more workers of one receiver finish together than
// it has deliveries due: the first of them takes the one left, and the others none.
func TestWorkersOfAGroupNeverShareADelivery(t *testing.T) {
	t.Parallel()
	s := newSetup(t, false)
	ctx := context.Background()
	pool := s.a.Store.Pool
	account, sub, url := s.deliveriesToAHealthyReceiver(t, "fewer", 5)
	held := leaseOldest(t, pool, 4)
	next, err := s.a.Svc.Deliveries.SucceedTogether(ctx, account, sub, url, held)
	if err != nil {
		t.Fatal(err)
	}
	if len(next) != 4 || next[0] == uuid.Nil || slices.Contains(held, next[0]) ||
		next[1] != uuid.Nil || next[2] != uuid.Nil || next[3] != uuid.Nil {
		t.Fatalf("the four workers holding %v claimed %v, want the fifth delivery for the first and none for the others", held, next)
	}
	var leased int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries
		WHERE account_id = $1 AND status = 'Pending' AND leased_until > now()`, account).Scan(&leased); err != nil || leased != 1 {
		t.Errorf("%d deliveries leased (%v), want the one claimed", leased, err)
	}
}

// TestADeliveryQueuedToFullWorkersIsLeftToThem: while this process's workers fill a receiver's
// room, a delivery queued to it wakes no claim (which would find the room taken): the wake is
// left to them, and the first to go on takes it. Polling is off: nothing else could.
func TestADeliveryQueuedToFullWorkersIsLeftToThem(t *testing.T) {
	t.Parallel()
	s := newSetup(t, false, func(c *config.Config) {
		c.WebhookTimeout, c.WebhookRescueAfter, c.WebhookMaxInFlight = 10*time.Second, time.Minute, 2
	})
	release := make(chan struct{})
	s.rc.Respond = func(n int, w http.ResponseWriter, _ *http.Request) {
		if n <= 2 {
			<-release
		}
		w.WriteHeader(http.StatusNoContent)
	}
	if _, err := s.a.Store.Pool.Exec(context.Background(), `UPDATE webhook_subscriptions SET last_success_at = now()`); err != nil {
		t.Fatal(err)
	}
	s.addTags(t, "full-1@example.com", "x")
	s.addTags(t, "full-2@example.com", "x")
	deliveries := s.a.Svc.Deliveries
	deliveries.UsePolling(time.Hour)
	s.a.StartWorkers()
	s.rc.Next(t)
	s.rc.Next(t) // both workers of the receiver's room are in their attempts, held
	before := deliveries.LeftToWorkers()
	s.addTags(t, "full-3@example.com", "x")
	if n := deliveries.LeftToWorkers() - before; n != 1 {
		t.Errorf("the delivery queued to a receiver whose room the workers fill: %d wakes left to them, want 1", n)
	}
	close(release)
	var third api.WebhookPayload
	if err := json.Unmarshal(s.rc.Next(t).Body, &third); err != nil || len(third.Events) != 1 ||
		third.Events[0].Data.ContactInfo.ContactId != s.contact {
		t.Errorf("the third request: %+v (%v), want the third contact's event", third, err)
	}
}

// TestAWorkerGoingOnLooksFromTheDeliveryItMade: a worker going on looks for its subscription's
// next delivery from the time it is given (shortly before the one it made was due), so the
// index entries of deliveries made earlier are not walked; a delivery due before that time
// waits for a look from the oldest, which takes it first.
func TestAWorkerGoingOnLooksFromTheDeliveryItMade(t *testing.T) {
	t.Parallel()
	s := newSetup(t, false)
	ctx := context.Background()
	pool := s.a.Store.Pool
	account, sub, url := s.deliveriesToAHealthyReceiver(t, "from", 4)
	// due an hour (it came in late), ten minutes, a minute and a second ago
	rows, err := pool.Query(ctx, `WITH due AS (
			UPDATE webhook_deliveries d SET next_attempt_at = now() - o.ago
			FROM (SELECT delivery_id, (ARRAY[interval '1 hour', interval '10 minutes', interval '1 minute',
			                                 interval '1 second'])[row_number() OVER (ORDER BY delivery_id)] AS ago
			      FROM webhook_deliveries) o
			WHERE d.delivery_id = o.delivery_id RETURNING d.delivery_id, o.ago)
		SELECT delivery_id FROM due ORDER BY ago DESC`)
	var ids []uuid.UUID
	if err == nil {
		ids, err = pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	}
	if err != nil || len(ids) != 4 {
		t.Fatalf("%d deliveries (%v)", len(ids), err)
	}
	late, mine := ids[0], ids[1]
	if _, err := pool.Exec(ctx, `UPDATE webhook_deliveries SET leased_until = now() + interval '1 minute',
		next_attempt_at = now() + interval '1 minute' WHERE delivery_id = $1`, mine); err != nil {
		t.Fatal(err)
	}
	next, err := s.a.Svc.Deliveries.SucceedAndClaimNextFrom(ctx, account, mine, sub, url, time.Now().Add(-11*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if next != ids[2] {
		t.Errorf("looking from 11 minutes ago the worker claimed %s, want the delivery due a minute ago, %s (the one due an hour ago is %s)", next, ids[2], late)
	}
	next, err = s.a.Svc.Deliveries.SucceedAndClaimNext(ctx, account, next, sub, url)
	if err != nil {
		t.Fatal(err)
	}
	if next != late {
		t.Errorf("looking from the oldest the worker claimed %s, want the delivery due an hour ago, %s", next, late)
	}
}

// TestAWorkerGoingOnDoesNotWalkTheDeliveriesMadeBefore: the budget of a worker's claim of
// its subscription's next delivery. The entries of the deliveries made since the last vacuum
// stay in webhook_deliveries_pending, below the due ones (5,000 here, made an hour ago, with
// autovacuum off); a look from the oldest walks their pages every time (40 here), a look from
// shortly before the delivery the worker made reads a few, however many there are.
func TestAWorkerGoingOnDoesNotWalkTheDeliveriesMadeBefore(t *testing.T) {
	t.Parallel()
	s := newSetup(t, false)
	ctx := context.Background()
	pool := s.a.Store.Pool
	account, sub, url := s.deliveriesToAHealthyReceiver(t, "walk", 2)
	if _, err := pool.Exec(ctx, `ALTER TABLE webhook_deliveries SET (autovacuum_enabled = off);
		UPDATE webhook_deliveries SET next_attempt_at = now() - interval '1 minute'`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO webhook_deliveries (account_id, delivery_id, subscription_id, event_id,
			next_attempt_at, created_at, updated_at)
		SELECT $1, gen_random_uuid(), $2, gen_random_uuid(), now() - interval '1 hour' + i * interval '1 ms', now(), now()
		FROM generate_series(1, 5000) i`, account, sub); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE webhook_deliveries SET status = 'Succeeded', attempts = 1, next_attempt_at = NULL
		WHERE next_attempt_at < now() - interval '30 minutes'`); err != nil {
		t.Fatal(err)
	}
	mine := leaseOldest(t, pool, 1)[0]
	// goOn records mine's success and claims the next from from, in a transaction rolled back,
	// and counts the pages of the pending index it read
	goOn := func(from time.Time) (next uuid.UUID, pages int64) {
		t.Helper()
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx) //nolint:errcheck // nothing of it is kept
		// the pages this backend read, counted since it last sent its counts to the statistics
		fetched := func() (n int64) {
			if err := tx.QueryRow(ctx, `SELECT pg_stat_get_xact_blocks_fetched('webhook_deliveries_pending'::regclass)`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		before := fetched()
		q := db.New(tx)
		if err := q.DeliveryClaimSettings(ctx); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		status := int32(204)
		rows, err := testkit.DeliverySucceed(ctx, q, delivery.Success{AccountID: account, DeliveryID: mine, SubscriptionID: sub,
			Attempt: 1, ResponseStatus: &status, Now: now, ClaimNext: true, URL: url,
			LeaseUntil: now.Add(time.Minute), DueFrom: from})
		if err != nil || len(rows) != 1 {
			t.Fatalf("the worker claimed %d deliveries (%v), want 1", len(rows), err)
		}
		return rows[0].DeliveryID, fetched() - before
	}
	goOn(time.Time{}) // the first look from the oldest marks the entries it walks dead
	fromOldest, walked := goOn(time.Time{})
	fromMine, read := goOn(time.Now().Add(-2 * time.Minute))
	if fromOldest != fromMine {
		t.Errorf("the worker claimed %s looking from the oldest, %s looking from its delivery, want the same", fromOldest, fromMine)
	}
	if walked < 30 {
		t.Fatalf("looking from the oldest read %d pages of the pending index: the deliveries made left nothing to walk", walked)
	}
	if read > 6 { // its look, and the lease's new entry: each a descent from the root
		t.Errorf("looking from its delivery the worker read %d pages of the pending index (from the oldest: %d), want at most 6", read, walked)
	}
}

// TestAChainOfWorkersLooksFromTheOldestOnceASecond: where a worker going on looks for its next
// delivery: a second before the one it made was due, and from the oldest when its chain last
// did so a second ago or more, or when it does not know when its delivery was due.
func TestAChainOfWorkersLooksFromTheOldestOnceASecond(t *testing.T) {
	now := time.Now()
	due := now.Add(-5 * time.Second)
	for _, c := range []struct {
		what                string
		dueAt, sweptAt      time.Time
		wantFrom, wantSwept time.Time
	}{
		{"swept 100 ms ago", due, now.Add(-100 * time.Millisecond), due.Add(-time.Second), now.Add(-100 * time.Millisecond)},
		{"swept a second ago", due, now.Add(-time.Second), time.Time{}, now},
		{"never swept", due, time.Time{}, time.Time{}, now},
		{"due when, unknown", time.Time{}, now, time.Time{}, now},
	} {
		from, swept := delivery.NextLook(c.dueAt, c.sweptAt, now)
		if !from.Equal(c.wantFrom) || !swept.Equal(c.wantSwept) {
			t.Errorf("%s: looks from %v, swept %v; want %v, %v", c.what, from, swept, c.wantFrom, c.wantSwept)
		}
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

// A worker's wait for a row lock is bounded by lock_timeout (1 s): its success rewrites the
// subscription's row when it changes its health, and a transaction holding that row (here
// open) cannot keep the workers' connections, which the API's requests share. The statement
// fails; the lease then ends and the attempt is made again.
func TestAWorkersWaitForARowLockIsBounded(t *testing.T) {
	t.Parallel()
	s := newSetup(t, false)
	s.addTags(t, "bounded@example.com", "x")
	ctx := context.Background()
	pool := s.a.Store.Pool
	var account, sub, delivery uuid.UUID
	var url string
	if err := pool.QueryRow(ctx, `SELECT d.account_id, d.subscription_id, d.delivery_id, s.url FROM webhook_deliveries d
		JOIN webhook_subscriptions s USING (account_id, subscription_id)`).Scan(&account, &sub, &delivery, &url); err != nil {
		t.Fatal(err)
	}
	release := holding(t, pool, `SELECT 1 FROM webhook_subscriptions FOR UPDATE`)
	defer release()
	_, err := s.a.Svc.Deliveries.SucceedAndClaimNext(ctx, account, delivery, sub, url)
	if err == nil || !strings.Contains(err.Error(), "lock timeout") {
		t.Fatalf("a worker's success behind a subscription's row held open: %v, want the lock timeout", err)
	}
}
