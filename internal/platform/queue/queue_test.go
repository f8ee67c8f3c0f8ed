package queue

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeRows is a queue of n items in memory, claimed like rows: each claim takes up to max.
type fakeRows struct {
	mu       sync.Mutex
	left     int
	claims   int
	failNext int // claims that fail before the next succeeds
	running  atomic.Int32
	peak     atomic.Int32
	done     atomic.Int32
	hold     chan struct{} // when non-nil, each item's work waits for it
	// full, when non-nil, is closed once peak reaches fullAt: until then each item's work
	// waits, so the queue must fill its slots to make progress
	full     chan struct{}
	fullAt   int32
	fullOnce sync.Once
}

func (f *fakeRows) claim(ctx context.Context, max int) ([]Work, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.claims++
	if f.failNext > 0 {
		f.failNext--
		return nil, false, errors.New("database away")
	}
	n := min(max, f.left)
	f.left -= n
	work := make([]Work, n)
	for i := range work {
		work[i] = func(ctx context.Context) {
			now := f.running.Add(1)
			for p := f.peak.Load(); now > p && !f.peak.CompareAndSwap(p, now); p = f.peak.Load() {
			}
			if f.full != nil {
				if now == f.fullAt {
					f.fullOnce.Do(func() { close(f.full) })
				}
				<-f.full
			}
			if f.hold != nil {
				select {
				case <-f.hold:
				case <-ctx.Done():
					f.running.Add(-1)
					return
				}
			}
			f.running.Add(-1)
			f.done.Add(1)
		}
	}
	return work, n == max, nil
}

func (f *fakeRows) add(n int) {
	f.mu.Lock()
	f.left += n
	f.mu.Unlock()
}

// waitFor waits for cond. Its bound guards against a hang, never a claim of speed (the
// testkit's Patience; this package is below testkit, so it has its own).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// A backlog larger than the slots drains without polling: each finishing worker wakes the
// queue while the last claim was full. The first items wait until all 4 slots run one, and no
// more than the 4 ever run at once.
func TestBacklogDrainsWithoutPolling(t *testing.T) {
	t.Parallel()
	f := &fakeRows{left: 100, full: make(chan struct{}), fullAt: 4}
	q := New(Options{Name: "test", Slots: 4, PollEvery: time.Hour}, f.claim)
	q.Start()
	defer q.Stop(context.Background())
	waitFor(t, "100 items done", func() bool { return f.done.Load() == 100 })
	if p := f.peak.Load(); p != 4 {
		t.Errorf("peak concurrency %d, want the 4 slots", p)
	}
}

// Work queued after the queue went idle waits for a Wake (a commit in this process) or for
// the poll; with polling hourly, only the wake can have found it.
func TestWakeClaimsAtOnce(t *testing.T) {
	t.Parallel()
	f := &fakeRows{}
	q := New(Options{Name: "test", Slots: 2, PollEvery: time.Hour}, f.claim)
	q.Start()
	defer q.Stop(context.Background())
	waitFor(t, "the first look", func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.claims == 1 })
	f.add(1)
	q.Wake()
	waitFor(t, "the woken claim's item", func() bool { return f.done.Load() == 1 })
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.claims != 2 {
		t.Errorf("%d claims, want the first look and the woken one", f.claims)
	}
}

// A failing claim is retried with a growing wait, logged, and the queue recovers by itself.
func TestClaimFailuresBackOff(t *testing.T) {
	t.Parallel()
	f := &fakeRows{left: 3, failNext: 3}
	q := New(Options{Name: "test", Slots: 1, PollEvery: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond}, f.claim)
	start := time.Now()
	q.Start()
	defer q.Stop(context.Background())
	waitFor(t, "the items after the failures", func() bool { return f.done.Load() == 3 })
	// waits of 5, 10 and 20 ms after the three failures: at least 35 ms in all.
	if d := time.Since(start); d < 35*time.Millisecond {
		t.Errorf("recovered after %v: the failures were not backed off", d)
	}
}

// Stop lets the work in flight finish when it can, and cancels it past the deadline.
func TestStopFinishesOrCancelsWork(t *testing.T) {
	t.Parallel()
	f := &fakeRows{left: 2, hold: make(chan struct{})}
	q := New(Options{Name: "test", Slots: 2, PollEvery: time.Hour}, f.claim)
	q.Start()
	waitFor(t, "two items running", func() bool { return f.running.Load() == 2 })
	time.AfterFunc(20*time.Millisecond, func() { close(f.hold) })
	if err := q.Stop(context.Background()); err != nil || f.done.Load() != 2 {
		t.Fatalf("Stop = %v with %d done; want both finished", err, f.done.Load())
	}

	g := &fakeRows{left: 1, hold: make(chan struct{})} // never released
	q = New(Options{Name: "test", Slots: 1, PollEvery: time.Hour}, g.claim)
	q.Start()
	waitFor(t, "the item running", func() bool { return g.running.Load() == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := q.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) || g.running.Load() != 0 || g.done.Load() != 0 {
		t.Errorf("Stop = %v, %d running, %d done; want the deadline's error and the work cancelled", err, g.running.Load(), g.done.Load())
	}
}

// A claim made while an item's work runs can find nothing for want of what that work holds
// (a receiver's room, its lock), and then nothing wakes the queue but the poll: the work's
// end makes it look again. Here the second claim comes while the first item runs and finds
// nothing; the item left over must be claimed when that work ends, with the poll an hour off.
func TestWorkEndingAfterAnEmptyClaimLooksAgain(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var claims atomic.Int32
	var done atomic.Int32
	item := func(hold bool) Work {
		return func(ctx context.Context) {
			if hold {
				<-release
			}
			done.Add(1)
		}
	}
	q := New(Options{Name: "t", Slots: 2, PollEvery: time.Hour}, func(ctx context.Context, max int) ([]Work, bool, error) {
		switch claims.Add(1) {
		case 1: // one item, more may be due
			return []Work{item(true)}, true, nil
		case 2: // at once, with a slot free: nothing, the running item holds its receiver
			return nil, false, nil
		case 3: // after that item ended
			return []Work{item(false)}, false, nil
		}
		return nil, false, nil
	})
	q.Start()
	t.Cleanup(func() { close(release); _ = q.Stop(context.Background()) })
	waitFor(t, "the second claim, while the first item runs", func() bool { return claims.Load() == 2 })
	release <- struct{}{} // the first item ends
	waitFor(t, "the item left over claimed and done after the first one ended", func() bool { return done.Load() == 2 })
}
