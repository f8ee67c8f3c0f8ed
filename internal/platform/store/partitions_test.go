package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/internal/event"
	"github.com/contactd/contactd/internal/platform/store"
	"github.com/contactd/contactd/internal/testkit"
)

// Processes making the same partitions at once make each once, and none fails; an event
// that landed in the default partition for want of its day's partition moves into it when
// it is made, and reads as before.
func TestEventPartitionsMadeOnceAndFilledFromTheDefault(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testkit.NewStore(t)
	pool := testkit.Pool(st)
	today := time.Now().UTC().Truncate(24 * time.Hour)
	far := today.Add(30 * 24 * time.Hour).Add(13 * time.Hour)
	account, early := uuid.New(), event.NewEventID(far)
	if _, err := pool.Exec(ctx, `INSERT INTO webhook_events (account_id, event_id, event_type, payload, occurred_at)
		VALUES ($1, $2, 'TagsAdded', '{"early":true}', $3)`, account, early, far); err != nil {
		t.Fatal(err)
	}
	where := func() string {
		t.Helper()
		var table string
		if err := pool.QueryRow(ctx, `SELECT tableoid::regclass::text FROM webhook_events WHERE account_id = $1 AND event_id = $2`,
			account, early).Scan(&table); err != nil {
			t.Fatal(err)
		}
		return table
	}
	if w := where(); w != "webhook_events_default" {
		t.Fatalf("an event of a day without a partition is in %s", w)
	}
	var wg sync.WaitGroup
	made := make([]int, 4)
	errs := make([]error, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			made[i], errs[i] = st.EnsureEventPartitions(ctx, today, far)
		}()
	}
	wg.Wait()
	total := 0
	for i := range 4 {
		if errs[i] != nil {
			t.Fatalf("process %d: %v", i, errs[i])
		}
		total += made[i]
	}
	if total != 31-8 { // the migration made today's and the next seven days'
		t.Errorf("made %d partitions in all, want 23 (from 8 days ahead to 30)", total)
	}
	days, err := st.EventPartitionDays(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range days {
		if !d.Equal(today.Add(time.Duration(i) * 24 * time.Hour)) {
			t.Fatalf("partitions %v: not one a day from today", days)
		}
	}
	if len(days) != 31 {
		t.Errorf("%d partitions, want 31", len(days))
	}
	if w := where(); w != "webhook_events_p"+far.Format("20060102") {
		t.Errorf("the event is in %s after its day's partition was made", w)
	}
	var payload string
	if err := pool.QueryRow(ctx, `SELECT payload::text FROM webhook_events WHERE account_id = $1 AND event_id = $2`, account, early).
		Scan(&payload); err != nil || payload != `{"early":true}` {
		t.Errorf("the moved event reads %q (%v)", payload, err)
	}
}

// The bounds of a day's partition are the smallest ids of its first millisecond and of the
// next day's: an event of the day's last millisecond is inside, one of the next day's first
// is not.
func TestEventIDFloorBoundsADay(t *testing.T) {
	day := time.Date(2031, 3, 4, 0, 0, 0, 0, time.UTC)
	lo, hi := store.EventIDFloor(day), store.EventIDFloor(day.Add(24*time.Hour))
	first, last, next := event.NewEventID(day), event.NewEventID(day.Add(24*time.Hour-time.Millisecond)), event.NewEventID(day.Add(24*time.Hour))
	less := func(a, b uuid.UUID) bool { return a.String() < b.String() }
	if !less(lo, first) || !less(last, hi) || less(next, hi) {
		t.Errorf("day [%s, %s): first %s, last %s, next day's %s", lo, hi, first, last, next)
	}
}
