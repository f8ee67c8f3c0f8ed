package delivery

import (
	"context"
	"log/slog"
	"net/netip"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/event"
	"github.com/contactd/contactd/internal/platform/metrics"
	"github.com/contactd/contactd/internal/platform/queue"
	"github.com/contactd/contactd/internal/platform/store"
	"github.com/contactd/contactd/internal/platform/turns"
	"github.com/contactd/contactd/internal/subscription"
)

// Options configures delivery.
type Options struct {
	// Timeout bounds one attempt (15 s).
	Timeout time.Duration
	// AllowedNetworks are exempt from the SSRF guard (local development, tests).
	AllowedNetworks []netip.Prefix
	// Workers is how many attempts run at once in this process.
	Workers int
	// MaxInFlight is how many attempts one receiver (a URL) may have at once across every
	// process (4): a slow or hanging receiver then delays only its own deliveries.
	MaxInFlight int
	// RescueAfter is the lease on a claimed delivery: when the same attempt is made again if
	// its worker died. It must exceed Timeout, or a live attempt could be repeated.
	RescueAfter time.Duration
	// PollEvery is how often idle workers look for due deliveries that no change in this
	// process announced: retries, other processes' events, dead workers' leases (250 ms).
	PollEvery time.Duration
	Now       func() time.Time
	Log       *slog.Logger
	// Metrics counts attempts by outcome; nil records nothing.
	Metrics *metrics.Metrics
	// Secrets opens the secrets that sign each delivery.
	Secrets *subscription.Secrets
	// Live tells a live account from a sandbox, for the deliveries' livemode; nil: all live.
	Live func(ctx context.Context, account uuid.UUID) (bool, error)
	// Filtered counts the events subscriptions' filters leave out of the warnings this
	// service emits (SubscriptionFailing); nil counts nothing.
	Filtered *event.FilterTally
	// Turns are the process's heavy reads' turns, which the delivery log's pages take (nil:
	// none).
	Turns *turns.Turns
	// NATSURL is the NATS server whose JetStream takes the deliveries of nats:<subject>
	// subscriptions, each account's under NATSSubjectPrefix.<account id> ("": none).
	NATSURL, NATSSubjectPrefix string
}

// New returns the delivery service over st; Start runs its workers.
func New(st *store.Store, opt Options) *Service {
	if opt.Now == nil {
		opt.Now = func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }
	}
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	if opt.Turns == nil {
		opt.Turns = turns.New(1 << 20) // as good as none
	}
	if opt.MaxInFlight < 1 {
		opt.MaxInFlight = 4
	}
	s := &Service{store: st, timeout: opt.Timeout,
		now: opt.Now, rnd: defaultRand, log: opt.Log, metrics: opt.Metrics, opt: opt, secrets: opt.Secrets}
	s.http = NewHTTPClient(opt.Timeout, opt.AllowedNetworks, &s.bytesRead)
	s.queue = queue.New(queue.Options{Name: QueueName, Slots: opt.Workers, PollEvery: opt.PollEvery, Log: opt.Log}, s.claim)
	s.events = event.NewEmitter(s, event.NewSubscribers(st, opt.Now), opt.Filtered)
	s.nats = newNATSPublisher(opt.NATSURL, opt.NATSSubjectPrefix, opt.Timeout, opt.Log)
	s.chains = newChains()
	// one group in flight: the successes that finish meanwhile gather into the next, and a
	// larger group costs each less (decisions/0005)
	s.successes = store.NewGroup(st, store.GroupOptions{Name: "delivery_succeed", MaxFlying: 1}, s.succeedAll)
	return s
}

// UsePolling replaces how often idle workers look for due deliveries; for tests, before Start.
func (s *Service) UsePolling(every time.Duration) { s.queue.UsePolling(every) }

// Wake tells the workers that deliveries may be due now; it never blocks.
func (s *Service) Wake() { s.queue.Wake() }

// Queued tells the workers that deliveries to subscriptions were queued and committed: they
// are woken, unless this process's workers of each of those subscriptions fill its receiver's
// room (chains), and take them as they go on.
func (s *Service) Queued(subscriptions []uuid.UUID) {
	if s.chains.cover(subscriptions, s.opt.MaxInFlight) {
		s.leftToWorkers.Add(1)
		return
	}
	s.queue.Wake()
}

// Claims is how many times the workers of this process have looked for due deliveries.
func (s *Service) Claims() int64 { return s.queue.Claims() }

// Start runs the delivery workers until Stop.
func (s *Service) Start() { s.stopping.Store(false); s.queue.Start() }

// Stop lets running attempts finish (their results are recorded), within ctx; attempts
// still running when ctx ends are cancelled, and made again when their leases end.
func (s *Service) Stop(ctx context.Context) error {
	s.stopping.Store(true)
	err := s.queue.Stop(ctx)
	s.nats.close()
	return err
}

// RemoveFailingAfter is how long a Failing subscription may go without a success.
const RemoveFailingAfter = subscription.RemoveFailingAfter

// SweepTask removes Failing subscriptions without a success in RemoveFailingAfter, every
// ten minutes.
func (s *Service) SweepTask() queue.Task {
	return queue.Task{Name: "webhook_sweep", Every: 10 * time.Minute, Run: func(ctx context.Context) error {
		n, err := s.Sweep(ctx)
		if n > 0 {
			s.log.Info("removed failing subscriptions", slog.Int64("count", n))
		}
		return err
	}}
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
		return event.Announce(ctx, tx, uuid.Nil)
	})
	return n, err
}
