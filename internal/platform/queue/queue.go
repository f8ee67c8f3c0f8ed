// Package queue is contactd's one mechanism for background work: work queued in PostgreSQL
// rows, written in the transaction of the change that causes it, and run by workers in any
// number of processes. (docs/decisions/0001-row-queues.md says why it is not River.)
//
// The rows are each queue's own (a webhook delivery, a contact due for enrichment), and
// follow one convention:
//   - an item is due at a timestamp column (NULL: nothing to do);
//   - a claim takes due items with FOR UPDATE SKIP LOCKED, so workers in several processes
//     claim side by side, and moves each item's due time to the end of a lease;
//   - finishing an item clears its due time or sets the next one; an item whose worker died
//     is due again when its lease ends, for the same attempt.
//
// This package runs that convention: Queue claims for its free slots whenever there may be
// due work (woken by a commit in this process, by a finishing worker while a backlog is likely,
// and by polling, which finds retries, other processes' commits and ended leases), backs off
// while the database fails, and stops gracefully. Periodic runs maintenance tasks once per
// interval across all processes.
package queue

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Work is one claimed item's work. It runs under a context that Stop cancels only when its
// deadline passes; work cut off is made again when its lease ends.
type Work func(ctx context.Context)

// Claim leases up to max due items and returns their work (at most max items); more reports
// that more may be due now (typically: the claim was full).
type Claim func(ctx context.Context, max int) (work []Work, more bool, err error)

// Options configures a Queue.
type Options struct {
	// Name names the queue in logs and metrics.
	Name string
	// Slots is how many work items run at once in this process (at least 1).
	Slots int
	// PollEvery is how often an idle queue looks for due items nobody woke it for.
	PollEvery time.Duration
	// MaxBackoff bounds the wait between claims while claiming fails (30 s by default).
	MaxBackoff time.Duration
	Log        *slog.Logger
}

// Queue runs the work of one kind of queued row.
type Queue struct {
	opt    Options
	claim  Claim
	wake   chan struct{}
	loop   Loop
	claims atomic.Int64
	// wanted: the queue was woken (or polled) with no slot free, so a claim it would have
	// made waits for one (Wanted).
	wanted atomic.Bool
}

// New returns a stopped queue that claims with claim.
func New(opt Options, claim Claim) *Queue {
	if opt.Slots < 1 {
		opt.Slots = 1
	}
	if opt.PollEvery <= 0 {
		opt.PollEvery = 250 * time.Millisecond
	}
	if opt.MaxBackoff <= 0 {
		opt.MaxBackoff = 30 * time.Second
	}
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	return &Queue{opt: opt, claim: claim, wake: make(chan struct{}, 1)}
}

// UsePolling replaces how often an idle queue looks for due items; for tests, before Start.
func (q *Queue) UsePolling(every time.Duration) { q.opt.PollEvery = every }

// Wake tells the queue that items may be due now; it never blocks. Call it after the commit
// that queued them (store.Tx.AfterCommit).
func (q *Queue) Wake() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Claims is how many claims this queue has finished, successful or not: a test waits on it to
// know the queue has looked (with PollEvery long, the next look can only come from a wake).
func (q *Queue) Claims() int64 { return q.claims.Load() }

// Wanted reports that the queue has wanted to claim since its last claim and found no slot
// free: items may be due that no claim has seen. Work that could go on to more items of its
// own (the deliveries' workers) ends instead, so the next claim sees everything due.
func (q *Queue) Wanted() bool { return q.wanted.Load() }

// Start runs the queue until Stop.
func (q *Queue) Start() { q.loop.Start(q.run) }

// Stop takes no more work, lets the work in flight finish within ctx, then cancels it.
func (q *Queue) Stop(ctx context.Context) error { return q.loop.Stop(ctx) }

// run claims due items whenever slots are free and there may be some.
func (q *Queue) run(loop, work context.Context) {
	var inFlight sync.WaitGroup
	defer inFlight.Wait()
	free := make(chan struct{}, q.opt.Slots) // a token per free slot
	for range q.opt.Slots {
		free <- struct{}{}
	}
	var backlog atomic.Bool
	backoff := q.opt.PollEvery
	for loop.Err() == nil {
		n := len(free)
		var got []Work
		var more bool
		var err error
		if n > 0 {
			q.wanted.Store(false)
			got, more, err = q.claim(work, n)
			if err == nil {
				backlog.Store(more)
			}
			q.claims.Add(1)
		} else {
			q.wanted.Store(true)
		}
		claimed := q.claims.Load()
		for _, w := range got {
			<-free
			inFlight.Go(func() {
				defer func() {
					free <- struct{}{}
					// more was due; or a claim made while this ran may have found nothing for
					// want of what this held (a receiver's room, its lock): look again now
					if backlog.Load() || q.claims.Load() != claimed {
						q.Wake()
					}
				}()
				w(work)
			})
		}
		wait := q.opt.PollEvery
		switch {
		case err != nil && work.Err() == nil:
			q.opt.Log.Warn(q.opt.Name+": claiming due work failed", slog.Any("error", err), slog.Duration("retry_in", backoff))
			wait, backoff = backoff, min(2*backoff, q.opt.MaxBackoff)
		case err == nil:
			backoff = q.opt.PollEvery
		}
		if err == nil && more && len(free) > 0 {
			continue // more is due and a slot is free
		}
		timer := time.NewTimer(wait)
		select {
		case <-loop.Done():
		case <-q.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}
