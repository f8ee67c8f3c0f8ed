package queue

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/platform/store"
)

// Task is maintenance that runs once per Every across all processes (the sweep of Failing
// subscriptions, pruning): each task is a row of periodic_tasks, due at its next run, and a
// process claims a run by moving the due time one interval on, so it runs in one process
// however many run the workers. A run cut off by a crash is not retried before the next one,
// so a task must be idempotent and catch up on what it missed.
type Task struct {
	Name  string
	Every time.Duration
	Run   func(ctx context.Context) error
}

// Periodic runs tasks when they are due.
type Periodic struct {
	store *store.Store
	tasks []Task
	now   func() time.Time
	log   *slog.Logger
	loop  Loop
}

// NewPeriodic returns the stopped runner of tasks.
func NewPeriodic(st *store.Store, now func() time.Time, log *slog.Logger, tasks ...Task) *Periodic {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Periodic{store: st, tasks: tasks, now: now, log: log}
}

// Add adds a task, before Start.
func (p *Periodic) Add(t Task) { p.tasks = append(p.tasks, t) }

// Start looks for due tasks now and then every so often (a tenth of the shortest interval,
// between a second and a minute) until Stop.
func (p *Periodic) Start() {
	if len(p.tasks) == 0 {
		return
	}
	look := time.Minute
	for _, t := range p.tasks {
		look = min(look, t.Every/10)
	}
	look = max(look, time.Second)
	p.loop.Start(func(loop, work context.Context) {
		for loop.Err() == nil {
			if _, err := p.RunDue(work); err != nil && work.Err() == nil {
				p.log.Warn("periodic tasks: claiming failed", slog.Any("error", err))
			}
			select {
			case <-loop.Done():
			case <-time.After(look):
			}
		}
	})
}

// Stop lets a task that is running finish within ctx, then cancels it.
func (p *Periodic) Stop(ctx context.Context) error { return p.loop.Stop(ctx) }

// RunDue runs, one after another, the tasks that are due and that this process claimed
// first, and returns their names. A task's error is logged and recorded on its row.
func (p *Periodic) RunDue(ctx context.Context) ([]string, error) {
	now := p.now()
	names, next := make([]string, len(p.tasks)), make([]time.Time, len(p.tasks))
	byName := make(map[string]Task, len(p.tasks))
	for i, t := range p.tasks {
		names[i], next[i], byName[t.Name] = t.Name, now.Add(t.Every), t
	}
	var claimed []string
	err := p.store.Do(ctx, func(q *db.Queries) (err error) {
		if err = q.PeriodicEnsure(ctx, db.PeriodicEnsureParams{Names: names, Now: now}); err != nil {
			return err
		}
		claimed, err = q.PeriodicClaim(ctx, db.PeriodicClaimParams{Names: names, NextDueAts: next, Now: now})
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, name := range claimed {
		p.run(ctx, byName[name])
	}
	return claimed, nil
}

func (p *Periodic) run(ctx context.Context, t Task) {
	err := runRecovered(ctx, t.Run)
	var lastError *string
	if err != nil {
		msg := err.Error()
		lastError = &msg
		if ctx.Err() == nil {
			p.log.Warn("periodic task failed", slog.String("task", t.Name), slog.Any("error", err))
		}
	}
	if err := p.store.Do(ctx, func(q *db.Queries) error {
		return q.PeriodicFinish(ctx, db.PeriodicFinishParams{Name: t.Name, Now: p.now(), LastError: lastError})
	}); err != nil && ctx.Err() == nil {
		p.log.Warn("periodic task: recording the run failed", slog.String("task", t.Name), slog.Any("error", err))
	}
}

// runRecovered runs f, turning a panic into an error: one task's bug must not stop the others.
func runRecovered(ctx context.Context, f func(context.Context) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return f(ctx)
}
