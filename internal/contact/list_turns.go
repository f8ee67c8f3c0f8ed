package contact

import (
	"context"
	"slices"
	"sync"

	"github.com/google/uuid"
)

// listTurns are the list pages' turns at PostgreSQL: at most n pages query at once, and a
// page that finds them all taken waits. A freed turn goes to the waiting page whose account
// runs the fewest pages (the earliest of those), not simply the earliest: one account's
// burst of searches then queues behind itself, and another account's page waits at most for
// one page to finish, however many the first has queued. With nobody else waiting, one
// account may use every turn (no capacity is held back).
type listTurns struct {
	mu      sync.Mutex
	free    int
	running map[uuid.UUID]int
	waiting []*turnWaiter // in arrival order
}

type turnWaiter struct {
	account uuid.UUID
	granted chan struct{}
}

func newListTurns(n int) *listTurns {
	return &listTurns{free: n, running: map[uuid.UUID]int{}}
}

// take waits for a turn for account, or for ctx to end.
func (l *listTurns) take(ctx context.Context, account uuid.UUID) (release func(), err error) {
	l.mu.Lock()
	if l.free > 0 && len(l.waiting) == 0 {
		l.grant(account)
		l.mu.Unlock()
		return l.releaser(account), nil
	}
	w := &turnWaiter{account: account, granted: make(chan struct{})}
	l.waiting = append(l.waiting, w)
	l.mu.Unlock()
	select {
	case <-w.granted:
		return l.releaser(account), nil
	case <-ctx.Done():
		l.mu.Lock()
		i := slices.Index(l.waiting, w)
		if i >= 0 {
			l.waiting = slices.Delete(l.waiting, i, i+1)
		}
		l.mu.Unlock()
		if i < 0 { // granted as the request ended: pass the turn on
			l.release(account)
		}
		return nil, ctx.Err()
	}
}

func (l *listTurns) grant(account uuid.UUID) {
	l.free--
	l.running[account]++
}

func (l *listTurns) releaser(account uuid.UUID) func() {
	var once sync.Once
	return func() { once.Do(func() { l.release(account) }) }
}

func (l *listTurns) release(account uuid.UUID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.running[account]--; l.running[account] <= 0 {
		delete(l.running, account)
	}
	l.free++
	next := -1
	for i, w := range l.waiting {
		if next < 0 || l.running[w.account] < l.running[l.waiting[next].account] {
			next = i
		}
	}
	if next >= 0 {
		w := l.waiting[next]
		l.waiting = slices.Delete(l.waiting, next, next+1)
		l.grant(w.account)
		close(w.granted)
	}
}

// queued is how many pages wait for a turn (for tests).
func (l *listTurns) queued() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.waiting)
}
