package delivery

import (
	"context"
	"time"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/platform/queue"
	"github.com/contactd/contactd/internal/platform/store"
)

// The delivery queue is the Pending rows of webhook_deliveries, due at next_attempt_at (the
// convention of package queue). A claim takes due deliveries for the free workers in one
// statement, the event and the subscription included, and each worker makes one attempt and
// records it. A change committed in this process wakes the queue at once.

// throttleShare is the part of a second's worth of a throttled subscription's deliveries one
// claim may take: about what arrives between two claims of an idle queue (PollEvery, 250 ms).
const throttleShare = 0.25

// claimedDelivery is a row claimed with a lease until leaseEnds, as an attempt takes it.
func claimedDelivery(r db.DeliveryClaimRow, leaseEnds time.Time) (Args, db.DeliveryLoadRow) {
	return Args{AccountID: r.AccountID, DeliveryID: r.DeliveryID, Attempt: int(r.Attempts) + 1, leaseEnds: leaseEnds},
		db.DeliveryLoadRow{Status: r.Status, Attempts: r.Attempts, SubscriptionID: r.SubscriptionID,
			EventID: r.EventID, EventType: r.EventType, Payload: r.Payload, Url: r.Url, Secret: r.Secret,
			SecretSealed: r.SecretSealed, PreviousSecretSealed: r.PreviousSecretSealed,
			PreviousSecretUntil: r.PreviousSecretUntil, SubscriptionStatus: r.SubscriptionStatus,
			ClientSecretSealed: r.ClientSecretSealed}
}

// recordAndClaimNext records a success and leases the subscription's oldest due delivery for
// the same worker, in one statement, so that a receiver keeps its room (at most MaxInFlight
// attempts) busy without each attempt waiting for the dispatcher's next claim. The worker
// swaps its own lease for the next one, so any other claim counts either the old lease or the
// new one: it never adds to a receiver's count, and takes no lock. more is false when there is
// no next delivery (none due, or the subscription is throttled, held back, failing, or its URL
// changed): the dispatcher's claims find it then. When the statement fails, the success is
// recorded again (record).
func (s *Service) recordAndClaimNext(ctx context.Context, a Args, d db.DeliveryLoadRow, o outcome) (Args, db.DeliveryLoadRow, bool, error) {
	next, err := s.succeed(ctx, a, d, o, true)
	if err != nil {
		return a, d, false, s.record(ctx, a, d, o)
	}
	if next == nil {
		return a, d, false, nil
	}
	return next.a, next.d, true, nil
}

// succeed records a's success and, with claimNext, leases the subscription's next due
// delivery (nil: none), with the successes of the other workers finishing meanwhile
// (recordSuccesses).
func (s *Service) succeed(ctx context.Context, a Args, d db.DeliveryLoadRow, o outcome, claimNext bool) (*claimed, error) {
	return s.successes.Do(ctx, success{a: a, d: d, o: o, claimNext: claimNext})
}

// success is one worker's success, to record.
type success struct {
	a         Args
	d         db.DeliveryLoadRow
	o         outcome
	claimNext bool
}

// claimed is a delivery a worker leased until leaseEnds.
type claimed struct {
	a Args
	d db.DeliveryLoadRow
}

// recordSuccesses records the successes of workers finishing at once, and claims each one's
// next delivery, in one statement (DeliveriesSucceed): one round trip, one plan started and one
// commit for them all. The answers are in items' order.
func (s *Service) recordSuccesses(ctx context.Context, _ *db.Queries, items []success) ([]*claimed, error) {
	now := s.now()
	refreshBefore := now.Add(-time.Minute)
	p := db.DeliveriesSucceedParams{Now: now, RefreshBefore: &refreshBefore, LeaseUntil: now.Add(s.opt.RescueAfter)}
	for _, it := range items {
		var status int32 // none: an acknowledgement without a status code
		if it.o.status != nil {
			status = *it.o.status
		}
		var excerpt string
		if it.o.excerpt != nil {
			excerpt = *it.o.excerpt
		}
		p.AccountIds = append(p.AccountIds, it.a.AccountID)
		p.DeliveryIds = append(p.DeliveryIds, it.a.DeliveryID)
		p.SubscriptionIds = append(p.SubscriptionIds, it.d.SubscriptionID)
		p.Attempts = append(p.Attempts, int32(it.a.Attempt))
		p.ResponseStatuses = append(p.ResponseStatuses, status)
		p.LatenciesMs = append(p.LatenciesMs, int32(it.o.latency.Milliseconds()))
		p.ResponseExcerpts = append(p.ResponseExcerpts, excerpt)
		p.ClaimNext = append(p.ClaimNext, it.claimNext)
		p.Urls = append(p.Urls, it.d.Url)
	}
	var rows []db.DeliveriesSucceedRow
	err := s.store.Pipelined(ctx, func(q *db.Queries) (err error) {
		if err = q.DeliveriesSucceedSettings(ctx); err != nil {
			return err
		}
		rows, err = q.DeliveriesSucceed(ctx, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]*claimed, len(items))
	for _, r := range rows {
		a, d := claimedDelivery(db.DeliveryClaimRow{AccountID: r.AccountID, DeliveryID: r.DeliveryID, Status: r.Status,
			Attempts: r.Attempts, SubscriptionID: r.SubscriptionID, EventID: r.EventID, EventType: r.EventType, Payload: r.Payload,
			Url: r.Url, Secret: r.Secret, SecretSealed: r.SecretSealed, PreviousSecretSealed: r.PreviousSecretSealed,
			PreviousSecretUntil: r.PreviousSecretUntil, SubscriptionStatus: r.SubscriptionStatus,
			ClientSecretSealed: r.ClientSecretSealed}, p.LeaseUntil)
		out[r.Worker-1] = &claimed{a: a, d: d}
	}
	return out, nil
}

// claim leases up to max due deliveries for the length of RescueAfter, which exceeds an
// attempt's timeout: a lease ends before its attempt only when its worker died.
func (s *Service) claim(ctx context.Context, max int) ([]queue.Work, bool, error) {
	now := s.now()
	leaseEnds := now.Add(s.opt.RescueAfter)
	var rows []db.DeliveryClaimRow
	err := s.store.Pipelined(ctx, func(q *db.Queries) (err error) {
		if err = q.DeliveryClaimSettings(ctx); err != nil {
			return err
		}
		if err = q.DeliveryClaimLock(ctx); err != nil {
			return err
		}
		rows, err = q.DeliveryClaim(ctx, db.DeliveryClaimParams{Now: now, LeaseUntil: leaseEnds, Max: int32(max),
			MaxInFlight: int32(s.opt.MaxInFlight), ThrottleShare: throttleShare})
		return err
	})
	s.saturated.Store(err == nil && len(rows) >= max)
	work := make([]queue.Work, len(rows))
	for i, r := range rows {
		a, d := claimedDelivery(r, leaseEnds)
		work[i] = func(ctx context.Context) { s.attempt(ctx, a, d) }
	}
	// more may be due whenever this claim took any: a full claim leaves a backlog, and a
	// partial one may have been cut short by a receiver's limit, whose room each finishing
	// attempt frees (so a finishing worker claims again instead of waiting for the poll).
	return work, len(rows) > 0, store.Translate(err)
}
