package delivery

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/metrics"
	"github.com/contactd/contactd/internal/store"
	"github.com/contactd/contactd/internal/webhook"
)

// Options configures delivery.
type Options struct {
	// Timeout bounds one attempt (15 s).
	Timeout time.Duration
	// AllowedNetworks are exempt from the SSRF guard (local development, tests).
	AllowedNetworks []netip.Prefix
	// Workers is how many attempts run at once in this process.
	Workers int
	// RescueAfter is the lease on a claimed delivery: when the same attempt is made again if
	// its worker died. It must exceed Timeout, or a live attempt could be repeated.
	RescueAfter time.Duration
	// PollEvery is how often idle workers look for due deliveries that no change in this
	// process announced: retries, other processes' events, dead workers' leases (250 ms).
	PollEvery time.Duration
	// SweepEvery is how often Failing subscriptions are checked for removal.
	SweepEvery time.Duration
	Now        func() time.Time
	Log        *slog.Logger
	// Metrics counts attempts by outcome; nil records nothing.
	Metrics *metrics.Metrics
}

// New returns the delivery service over st; Start runs its workers.
func New(st *store.Store, opt Options) (*Service, error) {
	if opt.Now == nil {
		opt.Now = func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }
	}
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	if opt.PollEvery <= 0 {
		opt.PollEvery = 250 * time.Millisecond
	}
	if opt.Workers < 1 {
		opt.Workers = 1
	}
	s := &Service{store: st, http: NewHTTPClient(opt.Timeout, opt.AllowedNetworks), timeout: opt.Timeout,
		now: opt.Now, rnd: defaultRand, log: opt.Log, metrics: opt.Metrics, opt: opt, wake: make(chan struct{}, 1)}
	workers := river.NewWorkers()
	river.AddWorker(workers, &sweepWorker{s: s})
	cfg := &river.Config{
		Workers:           workers,
		Logger:            opt.Log,
		FetchPollInterval: time.Second,
		JobTimeout:        time.Minute,
		Queues: map[string]river.QueueConfig{
			river.QueueDefault: {MaxWorkers: 2}, // maintenance
		},
		PeriodicJobs: []*river.PeriodicJob{river.NewPeriodicJob(river.PeriodicInterval(opt.SweepEvery),
			func() (river.JobArgs, *river.InsertOpts) { return SweepArgs{}, nil },
			&river.PeriodicJobOpts{RunOnStart: true, ID: "webhook_sweep"})},
	}
	client, err := river.NewClient(riverpgxv5.New(st.Pool), cfg)
	if err != nil {
		return nil, err
	}
	s.river = client
	return s, nil
}

// Start runs the delivery workers and the periodic sweep until Stop.
func (s *Service) Start(ctx context.Context) error {
	if err := s.river.Start(ctx); err != nil {
		return err
	}
	s.queue.Start(s.dispatch)
	return nil
}

// Stop lets running attempts finish (their results are recorded), within ctx; attempts
// still running when ctx ends are cancelled, and made again when their leases end.
func (s *Service) Stop(ctx context.Context) error {
	queueErr := s.queue.Stop(ctx) // attempts cut off are made again when their leases end
	err := s.river.Stop(ctx)
	if ctx.Err() != nil {
		err = s.river.StopAndCancel(context.Background())
	}
	return errors.Join(queueErr, err)
}

// SweepArgs is the periodic job that removes subscriptions Failing for too long.
type SweepArgs struct{}

// Kind names the job for River.
func (SweepArgs) Kind() string { return "webhook_sweep" }

// RemoveFailingAfter is how long a Failing subscription may go without a success.
const RemoveFailingAfter = 5 * 24 * time.Hour

type sweepWorker struct {
	river.WorkerDefaults[SweepArgs]
	s *Service
}

func (w *sweepWorker) Work(ctx context.Context, _ *river.Job[SweepArgs]) error {
	n, err := w.s.Sweep(ctx)
	if n > 0 && w.s.log != nil {
		w.s.log.Info("removed failing subscriptions", slog.Int64("count", n))
	}
	return err
}

// Sweep removes Failing subscriptions without a success in RemoveFailingAfter.
func (s *Service) Sweep(ctx context.Context) (int64, error) {
	var n int64
	now := s.now()
	err := s.store.InTx(ctx, func(tx store.Tx) (err error) {
		cutoff := now.Add(-RemoveFailingAfter)
		n, err = tx.SubscriptionsSweepFailing(ctx, db.SubscriptionsSweepFailingParams{Now: now, Cutoff: &cutoff})
		if err != nil || n == 0 {
			return err
		}
		return webhook.Announce(ctx, tx, uuid.Nil)
	})
	return n, err
}
