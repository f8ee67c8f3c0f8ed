package event_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/contactd/contactd/internal/event"
	"github.com/contactd/contactd/internal/testkit"
)

// Writers race a poller: transactions write events (through record_events, as every writer
// does, some having written before, so that their transaction id is older than their lock),
// hold them open for random times (so they commit out of the order they started in), and some
// roll back. The poller, resuming from its cursor each time, must end with every committed
// event exactly once, and no other. Other accounts' transactions held open meanwhile do not
// hold it back: it drains while one of them is still open.
func TestFeedPollerNeverSkipsALateCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testkit.NewStore(t)
	pool := testkit.Pool(st)
	svc := event.NewFeed(st, 24*time.Hour, func() time.Time { return time.Now().UTC() }, nil, nil)
	account := uuid.New()

	var mu sync.Mutex
	committed := map[uuid.UUID]bool{}
	var inversions atomic.Int32 // commits of a transaction that started before one already committed
	var lastStarted atomic.Int64
	var writers sync.WaitGroup
	for w := range 8 {
		writers.Go(func() {
			for i := range 30 {
				tx, err := pool.Begin(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				id := uuid.Must(uuid.NewV7())
				payload, _ := json.Marshal(map[string]any{"eventId": id.String(), "w": w, "i": i})
				if i%2 == 0 { // a transaction id before the lock: a write of the contact's first
					if _, err := tx.Exec(ctx, `SELECT pg_current_xact_id()`); err != nil {
						t.Error(err)
						return
					}
					time.Sleep(time.Duration(rand.IntN(5)) * time.Millisecond)
				}
				var xid int64
				if err := tx.QueryRow(ctx, `SELECT record_events($1, ARRAY[$2::uuid], ARRAY['TagsAdded'], ARRAY[$1::uuid], ARRAY[$3::text],
					ARRAY[now()], ARRAY[''], false, NULL, NULL, NULL, NULL, NULL, false)`, account, id, string(payload)).Scan(new(int)); err != nil {
					t.Error(err)
					return
				}
				if err := tx.QueryRow(ctx, `SELECT xid::text::bigint FROM webhook_events WHERE event_id = $1`, id).Scan(&xid); err != nil {
					t.Error(err)
					return
				}
				time.Sleep(time.Duration(rand.IntN(15)) * time.Millisecond)
				if i%9 == 4 {
					time.Sleep(80 * time.Millisecond) // a slow transaction: many later ones commit first
				}
				if i%7 == 3 {
					_ = tx.Rollback(ctx)
					continue
				}
				if err := tx.Commit(ctx); err != nil {
					t.Error(err)
					return
				}
				if xid < lastStarted.Load() {
					inversions.Add(1)
				}
				for old := lastStarted.Load(); xid > old && !lastStarted.CompareAndSwap(old, xid); old = lastStarted.Load() {
				}
				mu.Lock()
				committed[id] = true
				mu.Unlock()
			}
		})
	}
	seen := map[uuid.UUID]int{}
	cursor := ""
	poll := func() int {
		p, err := svc.Page(ctx, account, cursor, nil, 7)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range p.Events {
			var v struct{ EventID uuid.UUID }
			if err := json.Unmarshal([]byte(e), &v); err != nil {
				t.Fatal(err)
			}
			seen[v.EventID]++
		}
		cursor = p.Next
		return len(p.Events)
	}
	done := make(chan struct{})
	go func() { writers.Wait(); close(done) }()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
			poll()
			time.Sleep(time.Millisecond)
		}
	}
	// another account's transaction, open: the account's feed does not wait for it
	other, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback(ctx) //nolint:errcheck // the test's end
	if _, err := other.Exec(ctx, `SELECT record_events($1, ARRAY[$2::uuid], ARRAY['TagsAdded'], ARRAY[$1::uuid], ARRAY['{}'],
		ARRAY[now()], ARRAY[''], false, NULL, NULL, NULL, NULL, NULL, false)`, uuid.New(), uuid.Must(uuid.NewV7())); err != nil {
		t.Fatal(err)
	}
	for poll() > 0 {
	}
	if inversions.Load() == 0 {
		t.Fatal("no transaction committed after a later one: the race was not exercised")
	}
	for id, n := range seen {
		if !committed[id] {
			t.Errorf("event %s was read but never committed", id)
		}
		if n > 1 {
			t.Errorf("event %s read %d times", id, n)
		}
	}
	for id := range committed {
		if seen[id] == 0 {
			t.Errorf("event %s committed but skipped by the poller", id)
		}
	}
	t.Logf("%d events committed, %d commits out of start order", len(committed), inversions.Load())
	if len(committed) < 200 {
		t.Errorf("only %d events: %s", len(committed), fmt.Sprint(len(seen)))
	}
}

// Pruning drops the day partitions of events wholly past the retention (their rows are
// not deleted one by one: the tables are gone), deletes the default partition's old events
// in batches, deletes the deliveries and attempts queued before the retention, fails the
// pending deliveries whose event went, and keeps everything else.
func TestPruneKeepsTheRetention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testkit.NewStore(t)
	pool := testkit.Pool(st)
	now := time.Date(2030, 1, 31, 12, 0, 0, 0, time.UTC)
	before := now.Add(-30 * 24 * time.Hour) // 2030-01-01 12:00
	svc := event.NewFeed(st, 30*24*time.Hour, func() time.Time { return now }, nil, nil)
	account, sub := uuid.New(), uuid.New()
	if _, err := pool.Exec(ctx, `INSERT INTO accounts VALUES ($1, 'p', now())`, account); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO webhook_subscriptions (account_id, subscription_id, url, event_type, secret_sealed, created_at, updated_at)
		VALUES ($1, $2, 'https://h.example.com', 'TagsAdded', 'v1.x.y', now(), now())`, account, sub); err != nil {
		t.Fatal(err)
	}
	// the partitions of the 42 days before now; the days ahead are the pruning's to make
	if made, err := st.EnsureEventPartitions(ctx, now.Add(-42*24*time.Hour), now.Add(-24*time.Hour)); err != nil || made != 42 {
		t.Fatalf("made %d partitions (%v), want 42", made, err)
	}
	// 12,000 events of contactd's ids five minutes apart from 40 days back (in the day
	// partitions), 2,000 of random ids half an hour apart (in the default partition), each
	// with a delivery and an attempt. The random ids (as before migration 00032) begin ffff,
	// the year 10,889 in a version 7 id: a wholly random one falls in one of the 50 day
	// partitions' ranges with a chance of about 1 in 65,000, so one of 2,000 does in about
	// 3 % of runs (seen once, failing the count below)
	if _, err := pool.Exec(ctx, `
		WITH e AS (
			INSERT INTO webhook_events (account_id, event_id, event_type, payload, occurred_at)
			SELECT $1::uuid, uuid_v7(at), 'TagsAdded', '{}'::json, at
			FROM generate_series(1, 12000) n, LATERAL (SELECT $3::timestamptz - interval '40 days' + n * interval '5 minutes' AS at) t
			UNION ALL
			SELECT $1, ('ffff' || substr(gen_random_uuid()::text, 5))::uuid, 'TagsAdded', '{}', $3::timestamptz - interval '40 days' + n * interval '30 minutes'
			FROM generate_series(1, 2000) n
			RETURNING event_id, occurred_at
		), d AS (
			INSERT INTO webhook_deliveries (account_id, delivery_id, subscription_id, event_id, status, created_at, updated_at)
			SELECT $1, gen_random_uuid(), $2, event_id, 'Succeeded', occurred_at, occurred_at FROM e RETURNING delivery_id, created_at
		)
		INSERT INTO webhook_attempts (account_id, delivery_id, attempt, attempted_at, latency_ms)
		SELECT $1, delivery_id, 1, created_at, 3 FROM d`, account, sub, now); err != nil {
		t.Fatal(err)
	}
	// the default partition has the random ids, and the events of the days with no partition
	// yet (from 2030-01-31): the pruning's new partitions take those
	v7InDefault := `SELECT count(*) FROM webhook_events_default WHERE substr(event_id::text, 15, 1) = '7'`
	if n, v7 := count(t, pool, `SELECT count(*) FROM webhook_events_default`), count(t, pool, v7InDefault); n-v7 != 2000 || v7 != 625 {
		t.Fatalf("%d events in the default partition, %d of them of contactd's ids; want 2,000 random and 625 (from 2030-01-31 on)", n, v7)
	}
	// two deliveries replayed just now, pending: one of an event of 2029-12-25, one of yesterday
	orphan, kept := uuid.New(), uuid.New()
	if _, err := pool.Exec(ctx, `INSERT INTO webhook_deliveries (account_id, delivery_id, subscription_id, event_id, next_attempt_at, created_at, updated_at)
		SELECT $1, ids[n], $2, (SELECT event_id FROM webhook_events WHERE occurred_at >= ats[n] ORDER BY occurred_at LIMIT 1), $3, $3, $3
		FROM (SELECT ARRAY[$4::uuid, $5::uuid] AS ids, ARRAY[$6::timestamptz, $7::timestamptz] AS ats) a, generate_series(1, 2) n`,
		account, sub, now, orphan, kept, time.Date(2029, 12, 25, 1, 0, 0, 0, time.UTC), now.Add(-24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	// what must stay: the events of the partitions from 2030-01-01 (whose day is not wholly
	// past the retention) and the default partition's since the retention; the deliveries
	// and attempts queued since the retention
	firstKeptDay := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	wantEvents := count(t, pool, `SELECT count(*) FROM webhook_events WHERE CASE WHEN tableoid = 'webhook_events_default'::regclass
		THEN occurred_at >= $1 ELSE occurred_at >= $2 END`, before, firstKeptDay)
	wantDeliveries := count(t, pool, `SELECT count(*) FROM webhook_deliveries WHERE created_at >= $1`, before)
	wantDefaultGone := count(t, pool, `SELECT count(*) FROM webhook_events_default WHERE occurred_at < $1`, before)
	wantDeliveriesGone := count(t, pool, `SELECT count(*) FROM webhook_deliveries WHERE created_at < $1`, before)

	// the days 2029-12-20 to 2029-12-31 end before 2030-01-01 12:00, as do the days the
	// migration made partitions for (this machine's today and the week after it)
	days, err := st.EventPartitionDays(ctx)
	if err != nil {
		t.Fatal(err)
	}
	migrations := slices.IndexFunc(days, func(d time.Time) bool { return d.Year() == 2029 })
	if migrations != 8 {
		t.Fatalf("partitions before pruning: %v; want the migration's 8, then 2029's", days)
	}
	p, err := svc.Prune(ctx)
	want := event.Pruned{Partitions: 12 + 8, Rows: int64(wantDefaultGone), Deliveries: int64(wantDeliveriesGone), Orphans: 1}
	if err != nil || p != want {
		t.Fatalf("pruned %+v (%v), want %+v", p, err, want)
	}
	if days, err = st.EventPartitionDays(ctx); err != nil {
		t.Fatal(err)
	}
	if len(days) != 31+7 || !days[0].Equal(firstKeptDay) || !days[len(days)-1].Equal(time.Date(2030, 2, 7, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("partitions after pruning: %d from %v to %v; want 38, from 2030-01-01 (the retention's day) to 2030-02-07 (seven days ahead)",
			len(days), days[0], days[len(days)-1])
	}
	if n := count(t, pool, `SELECT count(*) FROM pg_class WHERE relname LIKE 'webhook\_events\_p2029%'`); n != 0 {
		t.Errorf("%d tables of 2029's partitions left; want them dropped", n)
	}
	if n := count(t, pool, v7InDefault); n != 0 {
		t.Errorf("%d events of days that now have partitions left in the default partition", n)
	}
	events := count(t, pool, `SELECT count(*) FROM webhook_events`)
	deliveries := count(t, pool, `SELECT count(*) FROM webhook_deliveries`)
	attempts := count(t, pool, `SELECT count(*) FROM webhook_attempts`)
	if events != wantEvents || deliveries != wantDeliveries || attempts != wantDeliveries-2 {
		t.Errorf("after pruning: %d events, %d deliveries, %d attempts; want %d, %d, %d", events, deliveries, attempts,
			wantEvents, wantDeliveries, wantDeliveries-2)
	}
	var orphanStatus, keptStatus string
	if err := pool.QueryRow(ctx, `SELECT (SELECT status FROM webhook_deliveries WHERE delivery_id = $1), (SELECT status FROM webhook_deliveries WHERE delivery_id = $2)`,
		orphan, kept).Scan(&orphanStatus, &keptStatus); err != nil || orphanStatus != "Failed" || keptStatus != "Pending" {
		t.Errorf("replayed deliveries: of a dropped day's event %q, of yesterday's %q (%v); want Failed and Pending", orphanStatus, keptStatus, err)
	}
}

func count(t *testing.T, pool interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// The feed orders by transaction id as a number: 9 before 10 (as text it would not be).
func TestFeedOrdersTransactionsNumerically(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testkit.NewStore(t)
	account := uuid.New()
	svc := event.NewFeed(st, 24*time.Hour, time.Now, nil, nil)
	for _, xid := range []string{"10", "9", "100"} { // old transactions: below any horizon
		if _, err := testkit.Pool(st).Exec(ctx, `INSERT INTO webhook_events (account_id, event_id, event_type, payload, occurred_at, xid)
			VALUES ($1, gen_random_uuid(), 'TagsAdded', json_build_object('xid', $2::text), now(), $2::xid8)`, account, xid); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	cursor := ""
	for range 3 {
		p, err := svc.Page(ctx, account, cursor, nil, 1)
		if err != nil || len(p.Events) != 1 {
			t.Fatalf("page: %v %v", p, err)
		}
		var v struct{ Xid string }
		_ = json.Unmarshal([]byte(p.Events[0]), &v)
		got, cursor = append(got, v.Xid), p.Next
	}
	if fmt.Sprint(got) != "[9 10 100]" {
		t.Errorf("feed order %v, want 9 10 100", got)
	}
}
