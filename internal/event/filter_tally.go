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
// adds them to the subscriptions' filtered_events now and then (Flush): a count written by
// each write on its subscription's one row would make every write of the account wait on
// every other. A process that dies loses its last second of counts, never a delivery.
type FilterTally struct {
	store *store.Store
	// counted is told how many events each Add filtered out (the /metrics counter).
	counted func(n int)

	mu      sync.Mutex
	pending map[[2]uuid.UUID]int64

	stop chan struct{}
	done chan struct{}
}

// NewFilterTally returns a tally that flushes into st; counted (may be nil) hears every Add.
func NewFilterTally(st *store.Store, counted func(n int)) *FilterTally {
	return &FilterTally{store: st, counted: counted, pending: map[[2]uuid.UUID]int64{}}
}

// Add counts one filtered-out event for each of subs, the account's.
func (t *FilterTally) Add(accountID uuid.UUID, subs []uuid.UUID) {
	if t == nil || len(subs) == 0 {
		return
	}
	t.mu.Lock()
	for _, sub := range subs {
		t.pending[[2]uuid.UUID{accountID, sub}]++
	}
	t.mu.Unlock()
	if t.counted != nil {
		t.counted(len(subs))
	}
}

// Flush adds the counts so far to the subscriptions' rows; on failure they are kept for the
// next flush.
func (t *FilterTally) Flush(ctx context.Context) error {
	t.mu.Lock()
	taken := t.pending
	t.pending = map[[2]uuid.UUID]int64{}
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
		p.Counts = append(p.Counts, taken[k])
	}
	err := t.store.Do(ctx, func(q *db.Queries) error { return q.SubscriptionsCountFiltered(ctx, p) })
	if err != nil {
		t.mu.Lock()
		for k, n := range taken {
			t.pending[k] += n
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
