package delivery

import (
	"context"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
)

// SucceedAndClaimNext records the first attempt of a delivery a worker holds as a success
// from url, and claims the subscription's next due delivery, as a worker going on does; it
// returns the delivery claimed (uuid.Nil: none).
func (s *Service) SucceedAndClaimNext(ctx context.Context, account, delivery, sub uuid.UUID, url string) (uuid.UUID, error) {
	status := int32(http.StatusNoContent)
	now := s.now()
	rows, err := s.succeed(ctx, Args{AccountID: account, DeliveryID: delivery, Attempt: 1},
		db.DeliveryLoadRow{SubscriptionID: sub, Url: url}, outcome{status: &status}, now, now.Add(s.opt.RescueAfter), true)
	if err != nil || len(rows) == 0 {
		return uuid.Nil, err
	}
	return rows[0].DeliveryID, nil
}

// LeaseLeft is whether a worker holding a lease that ends at leaseEnds goes on to its
// receiver's next delivery (its other conditions met).
func (s *Service) LeaseLeft(leaseEnds time.Time) bool { return s.leaseLeft(Args{leaseEnds: leaseEnds}) }
