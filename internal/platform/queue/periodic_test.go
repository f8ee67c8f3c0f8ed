package queue_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/contactd/contactd/internal/platform/queue"
	"github.com/contactd/contactd/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// A task runs once per interval however many processes look for it: processes racing for the
// same run get it once between them, a look before the interval is over runs nothing, and a
// failing or panicking task is recorded on its row without stopping the others.
func TestPeriodicRunsOncePerIntervalAcrossProcesses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testkit.NewStore(t)
	clk := &clock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	var sweeps, prunes atomic.Int32
	tasks := []queue.Task{
		{Name: "sweep", Every: 10 * time.Minute, Run: func(context.Context) error { sweeps.Add(1); return nil }},
		{Name: "prune", Every: time.Hour, Run: func(context.Context) error {
			if prunes.Add(1) == 1 {
				return errors.New("disk full")
			}
			panic("a bug in prune")
		}},
	}
	processes := make([]*queue.Periodic, 4)
	for i := range processes {
		processes[i] = queue.NewPeriodic(st, clk.Now, nil, tasks...)
	}
	look := func() {
		t.Helper()
		var wg sync.WaitGroup
		for _, p := range processes {
			wg.Go(func() {
				if _, err := p.RunDue(ctx); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	look() // both are new, so due at once
	if sweeps.Load() != 1 || prunes.Load() != 1 {
		t.Fatalf("first look: %d sweeps, %d prunes; want one each", sweeps.Load(), prunes.Load())
	}
	clk.Add(9 * time.Minute)
	look()
	if sweeps.Load() != 1 {
		t.Errorf("9 minutes on: %d sweeps, want still 1", sweeps.Load())
	}
	clk.Add(time.Minute)
	look()
	if sweeps.Load() != 2 || prunes.Load() != 1 {
		t.Errorf("10 minutes on: %d sweeps, %d prunes; want 2 and 1", sweeps.Load(), prunes.Load())
	}
	lastError := func(name string) *string {
		var e *string
		if err := testkit.Pool(st).QueryRow(ctx, `SELECT last_error FROM periodic_tasks WHERE name = $1`, name).Scan(&e); err != nil {
			t.Fatal(err)
		}
		return e
	}
	if e := lastError("prune"); e == nil || *e != "disk full" {
		t.Errorf("prune's recorded error %v, want disk full", e)
	}
	clk.Add(time.Hour)
	look()
	if e := lastError("prune"); prunes.Load() != 2 || e == nil || *e != "panic: a bug in prune" {
		t.Errorf("after the panicking run: %d prunes, error %v", prunes.Load(), e)
	}
	if e := lastError("sweep"); e != nil || sweeps.Load() != 3 {
		t.Errorf("sweep: error %v, %d runs; want none and 3", e, sweeps.Load())
	}
	// a process that starts later (a restart) keeps the schedule: nothing is due yet.
	if ran, err := queue.NewPeriodic(st, clk.Now, nil, tasks...).RunDue(ctx); err != nil || len(ran) != 0 {
		t.Errorf("a new process ran %v (%v) before anything was due", ran, err)
	}
}
