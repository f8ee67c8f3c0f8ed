package queue

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestStopLetsWorkFinish(t *testing.T) {
	t.Parallel()
	var l Loop
	var runs, finished atomic.Int32
	release := make(chan struct{})
	run := func(loop, work context.Context) {
		runs.Add(1)
		select { // a unit of work in flight when Stop comes
		case <-release:
			finished.Add(1)
		case <-work.Done():
		}
		<-loop.Done()
	}
	l.Start(run)
	l.Start(run) // already running: no second loop
	time.AfterFunc(50*time.Millisecond, func() { close(release) })
	if err := l.Stop(context.Background()); err != nil || finished.Load() != 1 || runs.Load() != 1 {
		t.Errorf("Stop = %v with %d runs, %d finished; want the one run's work finished", err, runs.Load(), finished.Load())
	}
	if err := l.Stop(context.Background()); err != nil {
		t.Errorf("stopping a stopped loop: %v", err)
	}
}

func TestStopCancelsWorkPastTheDeadline(t *testing.T) {
	t.Parallel()
	var l Loop
	cancelled := make(chan struct{})
	run := func(loop, work context.Context) {
		<-work.Done() // work that never finishes by itself
		close(cancelled)
	}
	l.Start(run)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := l.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Stop = %v, want the deadline's error", err)
	}
	select {
	case <-cancelled:
	default:
		t.Error("Stop returned before the abandoned work ended")
	}
	restarted := make(chan struct{})
	l.Start(func(loop, work context.Context) { close(restarted); <-loop.Done() })
	<-restarted
	if err := l.Stop(context.Background()); err != nil {
		t.Errorf("stopping the restarted loop: %v", err)
	}
}
