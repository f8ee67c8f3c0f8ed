package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/internal/event"
	"github.com/contactd/contactd/internal/testkit"
)

// The running service's workers prune events past the retention by themselves: the task is
// scheduled in production, not only correct when called (events' own tests show what it
// keeps). An old day's partition is dropped, an old event of the default partition deleted.
func TestWorkersPruneOldEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := testkit.NewAPI(t)
	account, _ := a.Account("acme")
	oldDay := time.Now().UTC().Add(-a.Cfg.EventRetention - 48*time.Hour).Truncate(24 * time.Hour)
	if made, err := a.Store.EnsureEventPartitions(ctx, oldDay, oldDay); err != nil || made != 1 {
		t.Fatalf("made %d partitions (%v)", made, err)
	}
	insert := func(id uuid.UUID, at time.Time) uuid.UUID {
		if _, err := a.Store.Pool.Exec(ctx, `INSERT INTO webhook_events (account_id, event_id, event_type, payload, occurred_at)
			VALUES ($1, $2, 'TagsAdded', '{}', $3)`, account, id, at); err != nil {
			t.Fatal(err)
		}
		return id
	}
	oldAt := oldDay.Add(time.Hour)
	old := insert(event.NewEventID(oldAt), oldAt)
	oldDefault := insert(uuid.MustParse("ffff"+uuid.NewString()[4:]), oldAt) // an id of before 00032, in no day's range by chance
	recentAt := time.Now().Add(-time.Hour)
	recent := insert(event.NewEventID(recentAt), recentAt)
	oldPartition := "webhook_events_p" + oldDay.Format("20060102")
	if n := a.Count(t, `SELECT count(*) FROM ONLY `+oldPartition+` WHERE event_id = $1`, old); n != 1 {
		t.Fatalf("the old event is not in its day's partition")
	}
	a.StartWorkers()
	testkit.Eventually(t, "the events past the retention pruned", func() bool {
		return a.Count(t, `SELECT count(*) FROM webhook_events WHERE event_id IN ($1, $2)`, old, oldDefault) == 0
	})
	if n := a.Count(t, `SELECT count(*) FROM pg_class WHERE relname = $1`, oldPartition); n != 0 {
		t.Errorf("the old day's partition was emptied, not dropped")
	}
	if n := a.Count(t, `SELECT count(*) FROM webhook_events WHERE event_id = $1`, recent); n != 1 {
		t.Errorf("the event within the retention was pruned too")
	}
}
