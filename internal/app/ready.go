package app

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/contactd/contactd/internal/platform/store"
)

// readyFor is how long one readiness check answers every probe that follows it.
const readyFor = 500 * time.Millisecond

// readiness answers /readyz, which anyone who reaches the port may call as often as they
// like: one check runs at a time, and its answer serves every probe for readyFor, so a flood of
// probes costs the database at most a couple of pings a second and holds no goroutine waiting.
type readiness struct {
	st      *store.Store
	running sync.Mutex // held by the one check in flight
	mu      sync.Mutex // guards at and err
	at      time.Time
	err     error
}

func newReadiness(st *store.Store) *readiness {
	return &readiness{st: st, err: errors.New("not checked yet")}
}

// check is the latest answer, checked again when it is older than readyFor and no other
// probe is checking already (that probe's caller waits for it; the others get the last answer).
func (r *readiness) check(ctx context.Context) error {
	r.mu.Lock()
	fresh, last := time.Since(r.at) < readyFor, r.err
	r.mu.Unlock()
	if fresh || !r.running.TryLock() {
		return last
	}
	defer r.running.Unlock()
	err := ready(ctx, r.st)
	r.mu.Lock()
	r.at, r.err = time.Now(), err
	r.mu.Unlock()
	return err
}

func ready(ctx context.Context, st *store.Store) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := st.Pool.Ping(ctx); err != nil {
		return fmt.Errorf("database unreachable: %w", err)
	}
	ok, err := st.MigrationsCurrent(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("database migrations are not current")
	}
	return nil
}
