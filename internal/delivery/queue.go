package delivery

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

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

// A worker going on (recordAndClaimNext) looks for its subscription's next delivery from
// chainSlack before the one it just made was due, not from the oldest: below that, the
// subscription's entries in webhook_deliveries_pending are mostly those of deliveries already
// made, dead until the next vacuum, and a look from the oldest walks them all, every time
// (they grow with the deliveries made since the last vacuum). What is due earlier and was not
// taken in the claims' order (a delivery committed late, a lease that ended) is found by a look
// from the oldest: every dispatcher's claim makes one, and a chain of workers going on makes one
// every chainSweep, so it waits at most that long behind them.
const (
	chainSlack = time.Second
	chainSweep = time.Second
)

// nextClaim is a worker's claim of its subscription's next due delivery: leased until leaseEnds,
// looked for from from (nextLook).
type nextClaim struct{ leaseEnds, from time.Time }

// nextLook is where a worker going on at now after a looks for the next delivery (the zero
// time: from the oldest), and when its chain will then have looked from the oldest last.
func nextLook(a Args, now time.Time) (from, sweptAt time.Time) {
	if a.dueAt.IsZero() || now.Sub(a.sweptAt) >= chainSweep {
		return time.Time{}, now
	}
	return a.dueAt.Add(-chainSlack), a.sweptAt
}

// claimedDelivery is a row claimed with a lease until leaseEnds by claims that looked from
// the oldest at sweptAt, as an attempt takes it.
func claimedDelivery(r db.DeliveryClaimRow, leaseEnds, sweptAt time.Time) (Args, db.DeliveryLoadRow) {
	a := Args{AccountID: r.AccountID, DeliveryID: r.DeliveryID, Attempt: int(r.Attempts) + 1, leaseEnds: leaseEnds, sweptAt: sweptAt}
	if r.DueAt != nil {
		a.dueAt = *r.DueAt
	}
	return a,
		db.DeliveryLoadRow{Status: r.Status, Attempts: r.Attempts, SubscriptionID: r.SubscriptionID,
			EventID: r.EventID, EventType: r.EventType, Payload: r.Payload, Url: r.Url, Secret: r.Secret,
			SecretSealed: r.SecretSealed, PreviousSecretSealed: r.PreviousSecretSealed,
			PreviousSecretUntil: r.PreviousSecretUntil, SubscriptionStatus: r.SubscriptionStatus,
			ClientSecretSealed: r.ClientSecretSealed}
}

// recordAndClaimNext records a success and leases the subscription's oldest due delivery for
// the same worker, in one statement, so that a receiver keeps its room (at most MaxInFlight
// attempts) busy without each attempt waiting for the dispatcher's next claim. The worker
// swaps its own lease for the next one, so any other claim counts either the old lease or
// the new one: it never adds to a receiver's count, and takes no lock. more
// is false when there is no next delivery (none due, or the subscription is throttled, held
// back, failing, or its URL changed): the dispatcher's claims find it then. When the statement
// fails, the success is recorded alone.
func (s *Service) recordAndClaimNext(ctx context.Context, a Args, d db.DeliveryLoadRow, o outcome) (Args, db.DeliveryLoadRow, bool, error) {
	now := s.now()
	leaseEnds := now.Add(s.opt.RescueAfter)
	from, sweptAt := nextLook(a, now)
	rows, err := s.succeed(ctx, a, d, o, now, &nextClaim{leaseEnds: leaseEnds, from: from})
	if err != nil {
		return a, d, false, s.record(ctx, a, d, o)
	}
	if len(rows) == 0 {
		return a, d, false, nil
	}
	na, nd := claimedDelivery(rows[0], leaseEnds, sweptAt)
	return na, nd, true, nil
}

// succeed records a's success at now and, with n, claims the subscription's next due delivery.
// The successes of the workers that finish together go to PostgreSQL together (store.Group):
// one round trip, one transaction and one commit for all.
func (s *Service) succeed(ctx context.Context, a Args, d db.DeliveryLoadRow, o outcome, now time.Time, n *nextClaim) ([]db.DeliveryClaimRow, error) {
	p := Success{AccountID: a.AccountID, DeliveryID: a.DeliveryID, SubscriptionID: d.SubscriptionID,
		Attempt: int32(a.Attempt), ResponseStatus: o.status, LatencyMs: int32(o.latency.Milliseconds()),
		ResponseExcerpt: o.excerpt, Now: now, ClaimNext: n != nil, URL: d.Url}
	if n != nil {
		p.LeaseUntil, p.DueFrom = n.leaseEnds, n.from
	}
	return s.successes.Do(ctx, p)
}

// succeedAll sends successes as one pipeline, after the claims' settings.
func (s *Service) succeedAll(ctx context.Context, _ *db.Queries, ps []Success) ([][]db.DeliveryClaimRow, error) {
	var out [][]db.DeliveryClaimRow
	err := s.store.Pipelined(ctx, func(q *db.Queries) (err error) {
		if err := q.DeliveryClaimSettings(ctx); err != nil {
			return err
		}
		out, err = SendSuccesses(ctx, q, ps)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Success is a worker's successful attempt, and whether it goes on to its subscription's
// next due delivery (ClaimNext: leased until LeaseUntil, looked for from DueFrom on).
type Success struct {
	AccountID, DeliveryID, SubscriptionID uuid.UUID
	Attempt                               int32
	ResponseStatus                        *int32
	LatencyMs                             int32
	ResponseExcerpt                       *string
	Now                                   time.Time
	ClaimNext                             bool
	URL                                   string
	LeaseUntil, DueFrom                   time.Time
}

// SendSuccesses sends successes as one batch of DeliverySucceedMany, one statement per account,
// in the order of their subscriptions (two groups that both write subscriptions' rows, a
// receiver healthy again, lock them in the same order, and never wait on each other both
// ways), and returns each one's claimed delivery, if it went on to one; or the error that
// failed them all (one implicit transaction, after what q queued before).
func SendSuccesses(ctx context.Context, q *db.Queries, successes []Success) ([][]db.DeliveryClaimRow, error) {
	sorted, order := store.Sorted(successes, func(a, b Success) int {
		if c := bytes.Compare(a.AccountID[:], b.AccountID[:]); c != 0 {
			return c
		}
		return bytes.Compare(a.SubscriptionID[:], b.SubscriptionID[:])
	})
	var ps []db.DeliverySucceedManyParams
	var sent [][]int // for each statement, the position in sorted of each success it carries
	for i, sc := range sorted {
		if len(ps) == 0 || ps[len(ps)-1].AccountID != sc.AccountID {
			ps, sent = append(ps, db.DeliverySucceedManyParams{AccountID: sc.AccountID}), append(sent, nil)
		}
		p := &ps[len(ps)-1]
		sent[len(sent)-1] = append(sent[len(sent)-1], i)
		p.DeliveryIds, p.Attempts = append(p.DeliveryIds, sc.DeliveryID), append(p.Attempts, sc.Attempt)
		var status int32 // 0: none
		if sc.ResponseStatus != nil {
			status = *sc.ResponseStatus
		}
		p.ResponseStatuses = append(p.ResponseStatuses, status)
		p.LatenciesMs, p.ResponseExcerpts = append(p.LatenciesMs, sc.LatencyMs), append(p.ResponseExcerpts, sc.ResponseExcerpt)
		p.AttemptedAt, p.ClaimNext, p.Urls = append(p.AttemptedAt, sc.Now), append(p.ClaimNext, sc.ClaimNext), append(p.Urls, sc.URL)
		p.LeaseUntil, p.DueFrom = append(p.LeaseUntil, sc.LeaseUntil), append(p.DueFrom, sc.DueFrom)
	}
	out := make([][]db.DeliveryClaimRow, len(successes))
	var failed error
	results := q.DeliverySucceedMany(ctx, ps)
	results.Query(func(i int, rows []db.DeliverySucceedManyRow, err error) {
		if err != nil {
			failed = cmp.Or(failed, err)
			return
		}
		for _, r := range rows {
			if r.Position < 1 || int(r.Position) > len(sent[i]) {
				failed = cmp.Or(failed, fmt.Errorf("delivery succeed: a claim for success %d of %d", r.Position, len(sent[i])))
				return
			}
			at := order[sent[i][r.Position-1]]
			out[at] = append(out[at], db.DeliveryClaimRow{AccountID: r.AccountID, DeliveryID: r.DeliveryID, Status: r.Status,
				Attempts: r.Attempts, SubscriptionID: r.SubscriptionID, EventID: r.EventID, EventType: r.EventType,
				Payload: r.Payload, Url: r.Url, Secret: r.Secret, SecretSealed: r.SecretSealed,
				PreviousSecretSealed: r.PreviousSecretSealed, PreviousSecretUntil: r.PreviousSecretUntil,
				SubscriptionStatus: r.SubscriptionStatus, ClientSecretSealed: r.ClientSecretSealed, DueAt: r.DueAt})
		}
	})
	// the implicit transaction commits after the last result: Close reports whether it did
	if err := results.Close(); failed == nil {
		failed = err
	}
	if failed != nil {
		return nil, failed
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
		a, d := claimedDelivery(r, leaseEnds, now)
		work[i] = func(ctx context.Context) { s.attempt(ctx, a, d) }
	}
	// more may be due whenever this claim took any: a full claim leaves a backlog, and a
	// partial one may have been cut short by a receiver's limit, whose room each finishing
	// attempt frees (so a finishing worker claims again instead of waiting for the poll).
	return work, len(rows) > 0, store.Translate(err)
}
