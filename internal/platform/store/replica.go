package store

import (
	"context"
	"strconv"
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
//
// An erasure fences the standby (FenceReplica): reads leave it until it has replayed the
// erasure, so no page shows an erased person after the erasure answered. Fences come from
// every process by NOTIFY (ReplicaFences), and reads go to the standby only while they are
// heard.
type replica struct {
	pool    *pgxpool.Pool
	maxLag  time.Duration
	inUse   atomic.Bool
	lag     atomic.Int64 // nanoseconds, at the last look; -1 before one succeeded
	stop    context.CancelFunc
	stopped chan struct{}

	replayed atomic.Int64 // the standby's replay position at the last look
	fence    atomic.Int64 // the primary's position the standby must have replayed to serve
	// heard: fences from other processes are being heard, and every one missed while they
	// were not is covered (resync: the next look fences at the primary's position)
	heard, resync atomic.Bool

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
	return ReplicaState{Configured: true, InUse: r.serves(), Lag: time.Duration(max(r.lag.Load(), 0))}
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
	resync := r.resync.Swap(false)
	lag, written, ok := r.measure(ctx, primary)
	if !ok {
		r.resync.CompareAndSwap(false, resync)
		r.inUse.Store(false)
		return
	}
	if resync {
		r.raise(written)
		r.heard.Store(true)
	}
	r.lag.Store(int64(lag))
	r.inUse.Store(lag <= r.maxLag)
}

// serves reports whether reads go to the standby now: in use, every fence heard, and the
// highest one replayed.
func (r *replica) serves() bool {
	return r.inUse.Load() && r.heard.Load() && r.replayed.Load() >= r.fence.Load()
}

// raise moves the fence up to lsn.
func (r *replica) raise(lsn int64) {
	for {
		f := r.fence.Load()
		if lsn <= f || r.fence.CompareAndSwap(f, lsn) {
			return
		}
	}
}

// replay reads the standby's replay position: standby is false when it is not one any more
// (promoted: its history may differ).
func (r *replica) replay(ctx context.Context) (standby bool, replayed int64, err error) {
	err = r.pool.QueryRow(ctx, `SELECT pg_is_in_recovery(), (coalesce(pg_last_wal_replay_lsn(), '0/0') - '0/0')::bigint`).
		Scan(&standby, &replayed)
	if err == nil && standby {
		r.replayed.Store(replayed)
	}
	return standby, replayed, err
}

func (r *replica) measure(ctx context.Context, primary *pgxpool.Pool) (lag time.Duration, written int64, ok bool) {
	if err := primary.QueryRow(ctx, `SELECT (pg_current_wal_insert_lsn() - '0/0')::bigint`).Scan(&written); err != nil {
		return 0, 0, false
	}
	now := time.Now()
	standby, replayed, err := r.replay(ctx)
	if err != nil || !standby {
		return 0, 0, false
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
		return now.Sub(r.samples[0].at), written, true
	}
	r.samples = r.samples[caughtUp:]
	return now.Sub(r.samples[0].at), written, true
}

// fenceChannel carries each fence to every process: the primary's WAL position, in bytes.
const fenceChannel = "contactd_replica_fence"

// fenceWait bounds how long FenceReplica waits for the standby to replay the fence, so that a
// process that has not heard it yet reads nothing older: past it, those processes rely on
// the notification, heard within milliseconds.
const fenceWait = time.Second

// FenceReplica keeps reads off the standby, in every process, until it has replayed what the
// primary has committed so far: an erasure calls it once it committed. The fence is the WAL
// inserted so far, not the WAL written: a commit that did not wait for its WAL
// (synchronous_commit off) is past the written position. It waits up to a
// second for a standby of this process to get there. Without a standby here it still tells
// the processes that have one.
func (s *Store) FenceReplica(ctx context.Context) error {
	var lsn int64
	err := s.Pool.QueryRow(ctx, `SELECT l, pg_notify('`+fenceChannel+`', l::text)
		FROM (SELECT (pg_current_wal_insert_lsn() - '0/0')::bigint AS l) AS at`).Scan(&lsn)
	r := s.replica
	if r == nil {
		return err
	}
	if err != nil { // off until a look fences at a position past the commit
		r.heard.Store(false)
		r.resync.Store(true)
		return err
	}
	r.raise(lsn)
	wait, cancel := context.WithTimeout(ctx, fenceWait)
	defer cancel()
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		if standby, replayed, err := r.replay(wait); err != nil || !standby || replayed >= lsn {
			return nil
		}
		select {
		case <-wait.Done():
			return nil
		case <-time.After(pause):
		}
	}
}

// ReplicaFences is the follower that hears other processes' fences; without it running
// (Listen), no read goes to the standby.
func (s *Store) ReplicaFences() Follower { return fences{s.replica} }

type fences struct{ r *replica }

func (f fences) Channel() string { return fenceChannel }

func (f fences) Notified(payload string) {
	if lsn, err := strconv.ParseInt(payload, 10, 64); err == nil && f.r != nil {
		f.r.raise(lsn)
	}
}

func (f fences) Listening(up bool) {
	if f.r == nil {
		return
	}
	if up {
		f.r.resync.Store(true) // heard again at the next look, fenced at what was missed
	} else {
		f.r.heard.Store(false)
	}
}

// DoStale is Do for a read that may be a little stale: on the standby while it is in use,
// else (and inside an Atomic transaction) as Do.
func (s *Store) DoStale(ctx context.Context, fn func(q *db.Queries) error) error {
	if r := s.replica; r != nil && ambientOf(ctx) == nil && r.serves() {
		return Translate(fn(db.New(plannedDB{r.pool})))
	}
	return s.Do(ctx, fn)
}

// ReadSnapshotStale is ReadSnapshot on the standby while it is in use (a read-only
// transaction on a hot standby sees one consistent state of the primary's past).
func (s *Store) ReadSnapshotStale(ctx context.Context, fn func(q *db.Queries) error) error {
	if r := s.replica; r != nil && ambientOf(ctx) == nil && r.serves() {
		return Translate(pgx.BeginTxFunc(ctx, r.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
			func(tx pgx.Tx) error { return fn(db.New(plannedDB{tx})) }))
	}
	return s.ReadSnapshot(ctx, fn)
}
