package store

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contactd/contactd/gen/db"
)

// replica is a standby of the primary that serves the reads a few seconds of staleness does
// not hurt (lists, exports, the console's pages: DoStale, ReadSnapshotStale), while its lag
// is within maxLag. The lag is measured by time: each look notes the primary's WAL position
// with the time, and the standby's lag is how long ago the primary was at the position the
// standby has replayed (0 when it has replayed everything the primary had written at the
// look). An idle primary writes nothing, so an idle standby does not look behind.
type replica struct {
	pool    *pgxpool.Pool
	maxLag  time.Duration
	inUse   atomic.Bool
	lag     atomic.Int64 // nanoseconds, at the last look; -1 before one succeeded
	stop    context.CancelFunc
	stopped chan struct{}

	mu      sync.Mutex
	samples []walSample // the primary's positions not yet replayed, and the last one that was
}

type walSample struct {
	at  time.Time
	lsn int64
}

// maxSamples bounds the positions kept while a standby does not move: the oldest stays (the
// lag is measured from it), the ones between thin out, which only makes the lag look longer.
const maxSamples = 1000

// ReplicaState is the standby's state: whether one is configured, whether reads go to it
// now, and its lag at the last look.
type ReplicaState struct {
	Configured, InUse bool
	Lag               time.Duration
}

// Replica reports the standby's state.
func (s *Store) Replica() ReplicaState {
	r := s.replica
	if r == nil {
		return ReplicaState{}
	}
	return ReplicaState{Configured: true, InUse: r.inUse.Load(), Lag: time.Duration(max(r.lag.Load(), 0))}
}

// useReplica connects to the standby at url and looks at its lag every interval until the
// store is closed. Reads go to the primary until the first look finds it within maxLag.
func (s *Store) useReplica(ctx context.Context, url string, opt Options) error {
	pool, err := newPool(ctx, url, opt)
	if err != nil {
		return err
	}
	watch, stop := context.WithCancel(context.Background())
	r := &replica{pool: pool, maxLag: opt.ReplicaMaxLag, stop: stop, stopped: make(chan struct{})}
	r.lag.Store(-1)
	s.replica = r
	every := opt.ReplicaLookEvery
	if every <= 0 {
		every = time.Second
	}
	go func() {
		defer close(r.stopped)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			r.look(watch, s.Pool)
			select {
			case <-watch.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return nil
}

func (r *replica) close() {
	r.stop()
	<-r.stopped
	r.pool.Close()
}

// look measures the standby's lag, and decides whether reads go to it.
func (r *replica) look(ctx context.Context, primary *pgxpool.Pool) {
	lag, ok := r.measure(ctx, primary)
	if !ok {
		r.inUse.Store(false)
		return
	}
	r.lag.Store(int64(lag))
	r.inUse.Store(lag <= r.maxLag)
}

func (r *replica) measure(ctx context.Context, primary *pgxpool.Pool) (time.Duration, bool) {
	var written int64
	if err := primary.QueryRow(ctx, `SELECT (pg_current_wal_lsn() - '0/0')::bigint`).Scan(&written); err != nil {
		return 0, false
	}
	now := time.Now()
	var standby bool
	var replayed int64
	if err := r.pool.QueryRow(ctx, `SELECT pg_is_in_recovery(), (coalesce(pg_last_wal_replay_lsn(), '0/0') - '0/0')::bigint`).
		Scan(&standby, &replayed); err != nil || !standby {
		return 0, false // unreachable, or not a standby any more (promoted: its history may differ)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.samples = append(r.samples, walSample{at: now, lsn: written})
	caughtUp := -1 // the newest position the standby has replayed
	for i, smp := range r.samples {
		if smp.lsn <= replayed {
			caughtUp = i
		}
	}
	if caughtUp < 0 {
		if len(r.samples) > maxSamples {
			r.samples = append(r.samples[:1], r.samples[2:]...)
		}
		return now.Sub(r.samples[0].at), true
	}
	r.samples = r.samples[caughtUp:]
	return now.Sub(r.samples[0].at), true
}

// DoStale is Do for a read that may be a little stale: on the standby while it is in use,
// else (and inside an Atomic transaction) as Do.
func (s *Store) DoStale(ctx context.Context, fn func(q *db.Queries) error) error {
	if r := s.replica; r != nil && ambientOf(ctx) == nil && r.inUse.Load() {
		return Translate(fn(db.New(plannedDB{r.pool})))
	}
	return s.Do(ctx, fn)
}

// ReadSnapshotStale is ReadSnapshot on the standby while it is in use (a read-only
// transaction on a hot standby sees one consistent state of the primary's past).
func (s *Store) ReadSnapshotStale(ctx context.Context, fn func(q *db.Queries) error) error {
	if r := s.replica; r != nil && ambientOf(ctx) == nil && r.inUse.Load() {
		return Translate(pgx.BeginTxFunc(ctx, r.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
			func(tx pgx.Tx) error { return fn(db.New(plannedDB{tx})) }))
	}
	return s.ReadSnapshot(ctx, fn)
}
