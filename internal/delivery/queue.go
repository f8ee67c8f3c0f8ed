package delivery

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/store"
)

// The delivery queue is the Pending rows of webhook_deliveries, due at next_attempt_at. A
// dispatcher claims due deliveries for its free workers in one statement (the event and the
// subscription included) under a lease, and each worker makes one attempt and records it.
// A change committed in this process wakes its dispatcher at once; changes committed
// elsewhere, scheduled retries and leases of dead workers are found by polling.

// UsePolling replaces how often idle workers look for due deliveries; for tests, before Start.
func (s *Service) UsePolling(every time.Duration) { s.opt.PollEvery = every }

// wakeUp tells the dispatcher that deliveries may be due now; it never blocks.
func (s *Service) wakeUp() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// dispatch claims due deliveries whenever workers are free and there may be some: when
// woken by a commit, when a worker finishes while a backlog is likely (the last claim filled
// every free worker), and every PollEvery.
func (s *Service) dispatch(loop, work context.Context) {
	var inFlight sync.WaitGroup
	defer inFlight.Wait()
	free := make(chan struct{}, s.opt.Workers) // a token per idle worker
	for range s.opt.Workers {
		free <- struct{}{}
	}
	var backlog atomic.Bool
	backoff := s.opt.PollEvery
	for loop.Err() == nil {
		n := len(free)
		got, err := s.claim(work, n)
		if err == nil && n > 0 {
			backlog.Store(len(got) == n)
		}
		for _, c := range got {
			<-free
			inFlight.Go(func() {
				defer func() {
					free <- struct{}{}
					if backlog.Load() {
						s.wakeUp()
					}
				}()
				s.attempt(work, c.args, c.row)
			})
		}
		wait := s.opt.PollEvery
		switch {
		case err != nil && work.Err() == nil:
			s.log.Warn("webhooks: claiming due deliveries failed", slog.Any("error", err), slog.Duration("retry_in", backoff))
			wait, backoff = backoff, min(2*backoff, 30*time.Second)
		case err == nil:
			backoff = s.opt.PollEvery
		}
		if err == nil && n > 0 && len(got) == n {
			continue // every free worker got one: more may be due
		}
		timer := time.NewTimer(wait)
		select {
		case <-loop.Done():
		case <-s.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// claimed is one delivery a dispatcher holds the lease of.
type claimed struct {
	args Args
	row  db.DeliveryLoadRow
}

// claim leases up to max due deliveries for the length of RescueAfter, which exceeds an
// attempt's timeout: a lease ends before its attempt only when its worker died.
func (s *Service) claim(ctx context.Context, max int) ([]claimed, error) {
	if max == 0 {
		return nil, nil
	}
	now := s.now()
	var rows []db.DeliveryClaimRow
	err := s.store.Write(ctx, func(q *db.Queries) (err error) {
		rows, err = q.DeliveryClaim(ctx, db.DeliveryClaimParams{Now: now, LeaseUntil: now.Add(s.opt.RescueAfter), Max: int32(max)})
		return err
	})
	out := make([]claimed, len(rows))
	for i, r := range rows {
		out[i] = claimed{args: Args{AccountID: r.AccountID, DeliveryID: r.DeliveryID, Attempt: int(r.Attempts) + 1},
			row: db.DeliveryLoadRow{Status: r.Status, Attempts: r.Attempts, SubscriptionID: r.SubscriptionID,
				EventID: r.EventID, EventType: r.EventType, Payload: r.Payload, Url: r.Url, Secret: r.Secret,
				SubscriptionStatus: r.SubscriptionStatus}}
	}
	return out, store.Translate(err)
}
