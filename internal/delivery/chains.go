package delivery

import (
	"sync"

	"github.com/google/uuid"
)

// chains counts, per subscription, this process's workers attempting its deliveries. A worker
// whose attempt succeeds goes on to its subscription's next due delivery (recordAndClaimNext),
// so while a subscription has as many workers as its receiver may have attempts at once, a
// delivery queued for it is taken by one of them: a dispatcher's claim would find its
// receiver's room taken, and costs PostgreSQL a walk of the queue for nothing. Such a wake is
// left to the workers instead, and the first of them to end (whether or not it went on) wakes
// the queue, so nothing queued waits for a poll.
type chains struct {
	mu   sync.Mutex
	subs map[uuid.UUID]*chain
}

type chain struct {
	workers int
	// woken: a wake was left to these workers since the last of them ended
	woken bool
}

func newChains() *chains { return &chains{subs: map[uuid.UUID]*chain{}} }

// begin counts a worker attempting sub's deliveries.
func (c *chains) begin(sub uuid.UUID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := c.subs[sub]
	if ch == nil {
		ch = &chain{}
		c.subs[sub] = ch
	}
	ch.workers++
}

// end uncounts a worker of sub; wake reports that a wake was left to sub's workers, which the
// worker must now make.
func (c *chains) end(sub uuid.UUID) (wake bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := c.subs[sub]
	ch.workers--
	wake, ch.woken = ch.woken, false
	if ch.workers == 0 {
		delete(c.subs, sub)
	}
	return wake
}

// cover reports whether every one of subs has at least full workers here, and if so leaves
// the wake for deliveries queued to them to those workers.
func (c *chains) cover(subs []uuid.UUID, full int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, sub := range subs {
		if ch := c.subs[sub]; ch == nil || ch.workers < full {
			return false
		}
	}
	for _, sub := range subs {
		c.subs[sub].woken = true
	}
	return len(subs) > 0
}
