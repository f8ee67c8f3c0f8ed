package queue

import (
	"context"
	"sync"
)

// Loop is a restartable worker loop that stops gracefully: Stop ends the loop (no new work
// is taken), lets the work in flight finish within the caller's deadline, then cancels it.
// The zero value is stopped.
type Loop struct {
	mu      sync.Mutex
	stop    context.CancelFunc // ends the loop: no new work
	abandon context.CancelFunc // cancels the work in flight
	done    chan struct{}
}

// Start runs run in its own goroutine unless it runs already. run must return once loop is
// done, after the work it started (under work) has ended.
func (l *Loop) Start(run func(loop, work context.Context)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done != nil {
		return
	}
	loop, stop := context.WithCancel(context.Background())
	work, abandon := context.WithCancel(context.Background())
	done := make(chan struct{})
	l.stop, l.abandon, l.done = stop, abandon, done
	go func() {
		defer close(done)
		run(loop, work)
	}()
}

// Stop ends the loop and waits for the work in flight within ctx; when ctx ends first, it
// cancels that work, waits for run to return, and reports ctx's error.
func (l *Loop) Stop(ctx context.Context) error {
	l.mu.Lock()
	stop, abandon, done := l.stop, l.abandon, l.done
	l.stop, l.abandon, l.done = nil, nil, nil
	l.mu.Unlock()
	if done == nil {
		return nil
	}
	stop()
	defer abandon()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		abandon()
		<-done
		return ctx.Err()
	}
}
