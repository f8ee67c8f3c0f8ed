package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/internal/testkit"
)

// The running service's workers prune events past the retention by themselves: the task is
// scheduled in production, not only correct when called (events' own tests show what it keeps).
func TestWorkersPruneOldEvents(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	account, _ := a.Account("acme")
	insert := func(age time.Duration) uuid.UUID {
		id := uuid.Must(uuid.NewV7())
		if _, err := a.Store.Pool.Exec(context.Background(), `INSERT INTO webhook_events (account_id, event_id, event_type, payload, occurred_at)
			VALUES ($1, $2, 'TagsAdded', '{}', now() - $3::interval)`, account, id, age.String()); err != nil {
			t.Fatal(err)
		}
		return id
	}
	old := insert(a.Cfg.EventRetention + 24*time.Hour)
	recent := insert(time.Hour)
	a.StartWorkers()
	testkit.Eventually(t, "the event past the retention pruned", func() bool {
		return a.Count(t, `SELECT count(*) FROM webhook_events WHERE event_id = $1`, old) == 0
	})
	if n := a.Count(t, `SELECT count(*) FROM webhook_events WHERE event_id = $1`, recent); n != 1 {
		t.Errorf("the event within the retention was pruned too")
	}
}
