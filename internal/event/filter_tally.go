package event

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/platform/store"
)

// FilterTally counts, in this process, the events that subscriptions' filters left out, and
// those they could not be evaluated on (not delivered either: a filter fails closed), and
// adds them to the subscriptions' filtered_events and unevaluated_events now and then
// (Flush): a count written by
// each write on its subscription's one row would make every write of the account wait on
// every other. A process that dies loses its last second of counts, never a delivery.
type FilterTally struct {
	store *store.Store
	// counted is told how many events each Add filtered out, and how many it could not
	// evaluate (the /metrics counters).
	counted func(filtered, unevaluated int)

	mu      sync.Mutex
	pending map[[2]uuid.UUID]tally

	stop chan struct{}
	done chan struct{}
}

// tally is one subscription's counts of a flush.
type tally struct{ filtered, unevaluated int64 }

// NewFilterTally returns a tally that flushes into st; counted (may be nil) hears every Add.
func NewFilterTally(st *store.Store, counted func(filtered, unevaluated int)) *FilterTally {
	return &FilterTally{store: st, counted: counted, pending: map[[2]uuid.UUID]tally{}}
}

// Add counts one filtered-out event for each of filtered, and one event its filter could not
// evaluate for each of unevaluated: subscriptions of the account.
func (t *FilterTally) Add(accountID uuid.UUID, filtered, unevaluated []uuid.UUID) {
	if t == nil || len(filtered)+len(unevaluated) == 0 {
		return
	}
	t.mu.Lock()
	for _, sub := range filtered {
		k := [2]uuid.UUID{accountID, sub}
		c := t.pending[k]
		c.filtered++
		t.pending[k] = c
	}
	for _, sub := range unevaluated {
		k := [2]uuid.UUID{accountID, sub}
		c := t.pending[k]
		c.unevaluated++
		t.pending[k] = c
	}
	t.mu.Unlock()
	if t.counted != nil {
		t.counted(len(filtered), len(unevaluated))
	}
}

// Flush adds the counts so far to the subscriptions' rows; on failure they are kept for the
// next flush.
func (t *FilterTally) Flush(ctx context.Context) error {
	t.mu.Lock()
	taken := t.pending
	t.pending = map[[2]uuid.UUID]tally{}
	t.mu.Unlock()
	if len(taken) == 0 {
		return nil
	}
	keys := make([][2]uuid.UUID, 0, len(taken))
	for k := range taken {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]uuid.UUID) int {
		if c := bytes.Compare(a[0][:], b[0][:]); c != 0 {
			return c
		}
		return bytes.Compare(a[1][:], b[1][:])
	})
	p := db.SubscriptionsCountFilteredParams{}
	for _, k := range keys {
		p.AccountIds, p.SubscriptionIds = append(p.AccountIds, k[0]), append(p.SubscriptionIds, k[1])
		p.Counts, p.Unevaluated = append(p.Counts, taken[k].filtered), append(p.Unevaluated, taken[k].unevaluated)
	}
	err := t.store.Do(ctx, func(q *db.Queries) error { return q.SubscriptionsCountFiltered(ctx, p) })
	if err != nil {
		t.mu.Lock()
		for k, n := range taken {
			c := t.pending[k]
			c.filtered, c.unevaluated = c.filtered+n.filtered, c.unevaluated+n.unevaluated
			t.pending[k] = c
		}
		t.mu.Unlock()
	}
	return err
}

// Start flushes every interval until Stop.
func (t *FilterTally) Start(interval time.Duration) {
	t.stop, t.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(t.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-t.stop:
				return
			case <-tick.C:
				ctx, cancel := context.WithTimeout(context.Background(), interval)
				_ = t.Flush(ctx) // kept for the next tick
				cancel()
			}
		}
	}()
}

// Stop ends the flushes and flushes what is left, within ctx.
func (t *FilterTally) Stop(ctx context.Context) error {
	if t.stop != nil {
		close(t.stop)
		<-t.done
		t.stop = nil
	}
	return t.Flush(ctx)
}
