package feed_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/contactd/contactd/internal/feed"
	"github.com/contactd/contactd/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// Writers race a poller: transactions write events, hold them open for random times (so they
// commit out of the order they started in), and some roll back. The poller, resuming from
// its cursor each time, must end with every committed event exactly once, and no other.
func TestFeedPollerNeverSkipsALateCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testkit.NewStore(t)
	pool := testkit.Pool(st)
	svc := feed.New(st, 24*time.Hour, func() time.Time { return time.Now().UTC() }, nil)
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
				var xid int64
				if err := tx.QueryRow(ctx, `INSERT INTO webhook_events (account_id, event_id, event_type, payload, occurred_at)
					VALUES ($1, $2, 'TagsAdded', $3, now()) RETURNING xid::text::bigint`, account, id, payload).Scan(&xid); err != nil {
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
		p, err := svc.Feed(ctx, account, cursor, nil, 7)
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
	// a poller only goes past a transaction once the horizon has: any long transaction of the
	// cluster (another test's, here) holds it back; wait for it, then drain.
	waitHorizon(t, pool, lastStarted.Load())
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

// waitHorizon waits until every transaction up to xid has finished, as the feed sees it.
func waitHorizon(t *testing.T, pool interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, xid int64) {
	t.Helper()
	testkit.Eventually(t, fmt.Sprintf("the horizon passing transaction %d", xid), func() bool {
		var xmin int64
		if err := pool.QueryRow(context.Background(), `SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint`).Scan(&xmin); err != nil {
			t.Fatal(err)
		}
		return xmin > xid
	})
}

// Pruning deletes the events past the retention, with their deliveries and attempts, in
// batches, and keeps the rest.
func TestPruneKeepsTheRetention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testkit.NewStore(t)
	pool := testkit.Pool(st)
	now := time.Date(2030, 1, 31, 0, 0, 0, 0, time.UTC)
	svc := feed.New(st, 30*24*time.Hour, func() time.Time { return now }, nil)
	account, sub := uuid.New(), uuid.New()
	if _, err := pool.Exec(ctx, `INSERT INTO accounts VALUES ($1, 'p', now())`, account); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO webhook_subscriptions (account_id, subscription_id, url, event_type, secret_sealed, created_at, updated_at)
		VALUES ($1, $2, 'https://h.example.com', 'TagsAdded', 'v1.x.y', now(), now())`, account, sub); err != nil {
		t.Fatal(err)
	}
	// 12,000 events five minutes apart from 40 days back, each with a delivery and an attempt
	if _, err := pool.Exec(ctx, `
		WITH e AS (
			INSERT INTO webhook_events (account_id, event_id, event_type, payload, occurred_at)
			SELECT $1, gen_random_uuid(), 'TagsAdded', '{}', $3::timestamptz - interval '40 days' + n * interval '5 minutes'
			FROM generate_series(1, 12000) n RETURNING event_id, occurred_at
		), d AS (
			INSERT INTO webhook_deliveries (account_id, delivery_id, subscription_id, event_id, status, created_at, updated_at)
			SELECT $1, gen_random_uuid(), $2, event_id, 'Succeeded', occurred_at, occurred_at FROM e RETURNING delivery_id, created_at
		)
		INSERT INTO webhook_attempts (account_id, delivery_id, attempt, attempted_at, latency_ms)
		SELECT $1, delivery_id, 1, created_at, 3 FROM d`, account, sub, now); err != nil {
		t.Fatal(err)
	}
	var wantKept int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM webhook_events WHERE occurred_at >= $1`, now.Add(-30*24*time.Hour)).Scan(&wantKept); err != nil {
		t.Fatal(err)
	}
	n, err := svc.Prune(ctx)
	if err != nil || n != int64(12000-wantKept) {
		t.Fatalf("pruned %d (%v), want %d", n, err, 12000-wantKept)
	}
	var events, deliveries, attempts int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM webhook_events), (SELECT count(*) FROM webhook_deliveries),
		(SELECT count(*) FROM webhook_attempts)`).Scan(&events, &deliveries, &attempts); err != nil {
		t.Fatal(err)
	}
	if events != wantKept || deliveries != wantKept || attempts != wantKept {
		t.Errorf("after pruning: %d events, %d deliveries, %d attempts; want %d of each", events, deliveries, attempts, wantKept)
	}
}

// The feed orders by transaction id as a number: 9 before 10 (as text it would not be).
func TestFeedOrdersTransactionsNumerically(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testkit.NewStore(t)
	account := uuid.New()
	svc := feed.New(st, 24*time.Hour, time.Now, nil)
	for _, xid := range []string{"10", "9", "100"} { // old transactions: below any horizon
		if _, err := testkit.Pool(st).Exec(ctx, `INSERT INTO webhook_events (account_id, event_id, event_type, payload, occurred_at, xid)
			VALUES ($1, gen_random_uuid(), 'TagsAdded', json_build_object('xid', $2::text), now(), $2::xid8)`, account, xid); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	cursor := ""
	for range 3 {
		p, err := svc.Feed(ctx, account, cursor, nil, 1)
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
