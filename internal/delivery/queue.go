package delivery

import (
	"bytes"
	"context"
	"slices"
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
// the same worker, in one round trip and one transaction, so that a receiver keeps its room
// (at most MaxInFlight attempts) busy without each attempt waiting for the dispatcher's next
// claim: the room the success frees is never seen free by another claim (the dispatcher's
// waits for the transaction, taking the lock this one holds shared). more is false when
// there is no next delivery (none due, or the subscription is throttled, or held back, or
// its receiver is at its limit): the dispatcher's claims find it then. When the transaction
// fails, the success is recorded alone.
func (s *Service) recordAndClaimNext(ctx context.Context, a Args, d db.DeliveryLoadRow, o outcome) (Args, db.DeliveryLoadRow, bool, error) {
	now := s.now()
	leaseEnds := now.Add(s.opt.RescueAfter)
	rows, err := s.successes.Do(ctx, success{record: successRecord(a, d, o, now, true),
		next: db.DeliveryClaimNextParams{AccountID: a.AccountID, SubscriptionID: d.SubscriptionID,
			Now: now, LeaseUntil: leaseEnds, MaxInFlight: int32(s.opt.MaxInFlight)}})
	if err != nil {
		return a, d, false, s.record(ctx, a, d, o)
	}
	if len(rows) == 0 {
		return a, d, false, nil
	}
	next, nd := claimedDelivery(db.DeliveryClaimRow(rows[0]), leaseEnds)
	return next, nd, true, nil
}

// success is one worker's recordAndClaimNext.
type success struct {
	record db.DeliveryRecordSuccessParams
	next   db.DeliveryClaimNextParams
}

// recordSuccesses records the successes of workers finishing at once, and claims each one's
// next delivery, in one round trip and one transaction: each success and its claim are the
// two statements recordAndClaimNext describes, one pair after another, so a claim counts the
// leases the pairs before it ended and took. Pairs go in subscription order, the order in
// which their records may lock subscriptions, so two groups never wait on each other both ways.
func (s *Service) recordSuccesses(ctx context.Context, _ *db.Queries, items []success) ([][]db.DeliveryClaimNextRow, error) {
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int {
		a, b := items[i].record, items[j].record
		if c := bytes.Compare(a.AccountID[:], b.AccountID[:]); c != 0 {
			return c
		}
		return bytes.Compare(a.SubscriptionID[:], b.SubscriptionID[:])
	})
	claimed := make([][]db.DeliveryClaimNextRow, len(items))
	err := s.store.Batched(ctx, func(q *db.Queries) error {
		for _, i := range order {
			if err := q.DeliveryRecordSuccess(ctx, items[i].record); err != nil {
				return err
			}
			rows, err := q.DeliveryClaimNext(ctx, items[i].next)
			if err != nil {
				return err
			}
			claimed[i] = rows
		}
		return nil
	})
	return claimed, err
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
	leaseEnds := now.Add(s.opt.RescueAfter)
	var rows []db.DeliveryClaimRow
	err := s.store.Pipelined(ctx, func(q *db.Queries) (err error) {
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
