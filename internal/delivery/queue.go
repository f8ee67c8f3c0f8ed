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

// claimedDelivery is a claimed row as an attempt takes it.
func claimedDelivery(r db.DeliveryClaimRow) (Args, db.DeliveryLoadRow) {
	return Args{AccountID: r.AccountID, DeliveryID: r.DeliveryID, Attempt: int(r.Attempts) + 1},
		db.DeliveryLoadRow{Status: r.Status, Attempts: r.Attempts, SubscriptionID: r.SubscriptionID,
			EventID: r.EventID, EventType: r.EventType, Payload: r.Payload, Url: r.Url, Secret: r.Secret,
			SecretSealed: r.SecretSealed, PreviousSecretSealed: r.PreviousSecretSealed,
			PreviousSecretUntil: r.PreviousSecretUntil, SubscriptionStatus: r.SubscriptionStatus,
			ClientSecretSealed: r.ClientSecretSealed}
}

// recordAndClaimNext records a success and leases the subscription's oldest due delivery for
// the same worker, in one round trip and one transaction, so that a receiver keeps its room
// (at most MaxInFlight attempts) busy without each attempt waiting for the dispatcher's next
// claim: the room the success frees is never seen free by another claim (the dispatcher's
// waits for the transaction, taking the lock this one holds shared). more is false when
// there is no next delivery (none due, or the subscription is throttled, or held back, or
// its receiver is at its limit): the dispatcher's claims find it then. When the transaction
// fails, the success is recorded alone.
func (s *Service) recordAndClaimNext(ctx context.Context, a Args, d db.DeliveryLoadRow, o outcome) (Args, db.DeliveryLoadRow, bool, error) {
	now := s.now()
	var rows []db.DeliveryClaimNextRow
	err := s.store.Pipelined(ctx, func(q *db.Queries) (err error) {
		if err = q.DeliveryRecordSuccess(ctx, successRecord(a, d, o, now, true)); err != nil {
			return err
		}
		rows, err = q.DeliveryClaimNext(ctx, db.DeliveryClaimNextParams{AccountID: a.AccountID, SubscriptionID: d.SubscriptionID,
			Now: now, LeaseUntil: now.Add(s.opt.RescueAfter), MaxInFlight: int32(s.opt.MaxInFlight)})
		return err
	})
	if err != nil {
		return a, d, false, s.record(ctx, a, d, o)
	}
	if len(rows) == 0 {
		return a, d, false, nil
	}
	next, nd := claimedDelivery(db.DeliveryClaimRow(rows[0]))
	return next, nd, true, nil
}

// successRecord is DeliveryRecordSuccess's parameters for a's success at now.
func successRecord(a Args, d db.DeliveryLoadRow, o outcome, now time.Time, claimNext bool) db.DeliveryRecordSuccessParams {
	refreshBefore := now.Add(-time.Minute)
	return db.DeliveryRecordSuccessParams{AccountID: a.AccountID, DeliveryID: a.DeliveryID, SubscriptionID: d.SubscriptionID,
		Attempt: int32(a.Attempt), ResponseStatus: o.status, LatencyMs: int32(o.latency.Milliseconds()), Now: &now,
		RefreshBefore: &refreshBefore, ResponseExcerpt: o.excerpt, ClaimNext: claimNext}
}

// claim leases up to max due deliveries for the length of RescueAfter, which exceeds an
// attempt's timeout: a lease ends before its attempt only when its worker died.
func (s *Service) claim(ctx context.Context, max int) ([]queue.Work, bool, error) {
	now := s.now()
	var rows []db.DeliveryClaimRow
	err := s.store.Pipelined(ctx, func(q *db.Queries) (err error) {
		if err = q.DeliveryClaimLock(ctx); err != nil {
			return err
		}
		rows, err = q.DeliveryClaim(ctx, db.DeliveryClaimParams{Now: now, LeaseUntil: now.Add(s.opt.RescueAfter), Max: int32(max),
			MaxInFlight: int32(s.opt.MaxInFlight), ThrottleShare: throttleShare})
		return err
	})
	s.saturated.Store(err == nil && len(rows) >= max)
	work := make([]queue.Work, len(rows))
	for i, r := range rows {
		a, d := claimedDelivery(r)
		work[i] = func(ctx context.Context) { s.attempt(ctx, a, d) }
	}
	// more may be due whenever this claim took any: a full claim leaves a backlog, and a
	// partial one may have been cut short by a receiver's limit, whose room each finishing
	// attempt frees (so a finishing worker claims again instead of waiting for the poll).
	return work, len(rows) > 0, store.Translate(err)
}
