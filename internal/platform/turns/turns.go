// Package turns shares PostgreSQL's time between accounts for the heavy reads (list and search
// pages, feed pages, duplicates, a contact's events, a subscription's attempts): at most n run
// at once in a process, and a read that finds every turn taken waits. A freed turn goes to the
// waiting read whose account runs the fewest (the earliest of those), not simply the earliest:
// one account's burst queues behind itself, and another account's read waits at most for one
// read to finish, however many the first has queued. With nobody else waiting, one account may
// use every turn (no capacity is held back).
//
// Take turns only at the leaves (the statement that reads), never around a call that takes one
// itself: a read holding a turn while it waits for another could wait for itself.
package turns

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
)

// Turns are the heavy reads' turns of a process.
type Turns struct {
	mu      sync.Mutex
	free    int
	running map[uuid.UUID]int
	waiting []*waiter // in arrival order
	// overtaken counts the turns granted ahead of a read that arrived earlier.
	overtaken atomic.Uint64
}

type waiter struct {
	account uuid.UUID
	granted chan struct{}
}

// New returns n turns.
func New(n int) *Turns {
	return &Turns{free: n, running: map[uuid.UUID]int{}}
}

// Take waits for a turn for account, or for ctx to end; release gives the turn back.
func (t *Turns) Take(ctx context.Context, account uuid.UUID) (release func(), err error) {
	t.mu.Lock()
	if t.free > 0 && len(t.waiting) == 0 {
		t.grant(account)
		t.mu.Unlock()
		return t.releaser(account), nil
	}
	w := &waiter{account: account, granted: make(chan struct{})}
	t.waiting = append(t.waiting, w)
	t.mu.Unlock()
	select {
	case <-w.granted:
		return t.releaser(account), nil
	case <-ctx.Done():
		t.mu.Lock()
		i := slices.Index(t.waiting, w)
		if i >= 0 {
			t.waiting = slices.Delete(t.waiting, i, i+1)
		}
		t.mu.Unlock()
		if i < 0 { // granted as the request ended: pass the turn on
			t.release(account)
		}
		return nil, ctx.Err()
	}
}

func (t *Turns) grant(account uuid.UUID) {
	t.free--
	t.running[account]++
}

func (t *Turns) releaser(account uuid.UUID) func() {
	var once sync.Once
	return func() { once.Do(func() { t.release(account) }) }
}

func (t *Turns) release(account uuid.UUID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.running[account]--; t.running[account] <= 0 {
		delete(t.running, account)
	}
	t.free++
	next := -1
	for i, w := range t.waiting {
		if next < 0 || t.running[w.account] < t.running[t.waiting[next].account] {
			next = i
		}
	}
	if next >= 0 {
		w := t.waiting[next]
		t.waiting = slices.Delete(t.waiting, next, next+1)
		if next > 0 {
			t.overtaken.Add(1)
		}
		t.grant(w.account)
		close(w.granted)
	}
}

// Queued is how many reads wait for a turn.
func (t *Turns) Queued() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.waiting)
}

// QueuedOf is how many of account's reads wait for a turn.
func (t *Turns) QueuedOf(account uuid.UUID) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, w := range t.waiting {
		if w.account == account {
			n++
		}
	}
	return n
}

// Overtaken counts the turns given to a read ahead of one that had waited longer (another
// account's, running more): the fairness at work.
func (t *Turns) Overtaken() uint64 { return t.overtaken.Load() }

// Size is how many turns there are in all.
func (t *Turns) Size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.free
	for _, r := range t.running {
		n += r
	}
	return n
}
