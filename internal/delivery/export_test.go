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
	next, err := s.RecordSuccessesTogether(ctx, []Leased{{Account: account, Delivery: delivery, Subscription: sub, URL: url}})
	if err != nil {
		return uuid.Nil, err
	}
	return next[0], nil
}

// Leased is a delivery a worker holds the lease of, for a subscription at URL.
type Leased struct {
	Account, Delivery, Subscription uuid.UUID
	URL                             string
}

// RecordSuccessesTogether records 204s for the first attempts of leased as workers finishing
// at once do, in one group, and returns the delivery each then claimed (uuid.Nil: none), in
// leased's order.
func (s *Service) RecordSuccessesTogether(ctx context.Context, leased []Leased) ([]uuid.UUID, error) {
	status := int32(http.StatusNoContent)
	items := make([]success, len(leased))
	for i, l := range leased {
		items[i] = success{a: Args{AccountID: l.Account, DeliveryID: l.Delivery, Attempt: 1},
			d: db.DeliveryLoadRow{SubscriptionID: l.Subscription, Url: l.URL}, o: outcome{status: &status}, claimNext: true}
	}
	claimed, err := s.recordSuccesses(ctx, nil, items)
	next := make([]uuid.UUID, len(claimed))
	for i, c := range claimed {
		if c != nil {
			next[i] = c.a.DeliveryID
		}
	}
	return next, err
}

// LeaseLeft is whether a worker holding a lease that ends at leaseEnds goes on to its
// receiver's next delivery (its other conditions met).
func (s *Service) LeaseLeft(leaseEnds time.Time) bool { return s.leaseLeft(Args{leaseEnds: leaseEnds}) }
