package delivery

import (
	"context"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
)

// SucceedAndClaimNext records the first attempt of a delivery a worker holds as a success
// from url, and claims the subscription's next due delivery, as a worker going on does,
// looking from the oldest; it returns the delivery claimed (uuid.Nil: none).
func (s *Service) SucceedAndClaimNext(ctx context.Context, account, delivery, sub uuid.UUID, url string) (uuid.UUID, error) {
	return s.SucceedAndClaimNextFrom(ctx, account, delivery, sub, url, time.Time{})
}

// SucceedAndClaimNextFrom is SucceedAndClaimNext looking for the next delivery from from.
func (s *Service) SucceedAndClaimNextFrom(ctx context.Context, account, delivery, sub uuid.UUID, url string, from time.Time) (uuid.UUID, error) {
	status := int32(http.StatusNoContent)
	now := s.now()
	rows, err := s.succeed(ctx, Args{AccountID: account, DeliveryID: delivery, Attempt: 1},
		db.DeliveryLoadRow{SubscriptionID: sub, Url: url}, outcome{status: &status}, now, &nextClaim{leaseEnds: now.Add(s.opt.RescueAfter), from: from})
	if err != nil || len(rows) == 0 {
		return uuid.Nil, err
	}
	return rows[0].DeliveryID, nil
}

// NextLook is where a worker going on at now looks for its next delivery after one due at
// dueAt, its chain having looked from the oldest at sweptAt (the zero time: from the oldest),
// and when its chain has then looked from the oldest last.
func NextLook(dueAt, sweptAt, now time.Time) (from, swept time.Time) {
	return nextLook(Args{dueAt: dueAt, sweptAt: sweptAt}, now)
}

// LeaseLeft is whether a worker holding a lease that ends at leaseEnds goes on to its
// receiver's next delivery (its other conditions met).
func (s *Service) LeaseLeft(leaseEnds time.Time) bool { return s.leaseLeft(Args{leaseEnds: leaseEnds}) }

// SucceedTogether records the first attempts of deliveries workers hold, all from url, as
// successes that finished together (one group), each worker claiming its subscription's next
// due delivery from the oldest; it returns the deliveries claimed, in deliveries' order
// (uuid.Nil: none).
func (s *Service) SucceedTogether(ctx context.Context, account, sub uuid.UUID, url string, deliveries []uuid.UUID) ([]uuid.UUID, error) {
	status := int32(http.StatusNoContent)
	now := s.now()
	ps := make([]Success, len(deliveries))
	for i, d := range deliveries {
		ps[i] = Success{AccountID: account, DeliveryID: d, SubscriptionID: sub, Attempt: 1,
			ResponseStatus: &status, Now: now, ClaimNext: true, URL: url,
			LeaseUntil: now.Add(s.opt.RescueAfter)}
	}
	rows, err := s.succeedAll(ctx, nil, ps)
	if err != nil {
		return nil, err
	}
	next := make([]uuid.UUID, len(rows))
	for i, r := range rows {
		if len(r) > 0 {
			next[i] = r[0].DeliveryID
		}
	}
	return next, nil
}

// LeftToWorkers is how many times deliveries were queued to subscriptions whose receivers'
// room this process's workers filled, and the wake left to them.
func (s *Service) LeftToWorkers() int64 { return s.leftToWorkers.Load() }
