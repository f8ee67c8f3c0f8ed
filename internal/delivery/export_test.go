package delivery

import (
	"context"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
)

// Leased is a delivery a worker holds the lease of.
type Leased struct{ Account, Delivery, Subscription uuid.UUID }

// RecordSuccessesTogether records 204s for the first attempts of leased as workers finishing at
// once do, in one group, and returns the delivery each then claimed (uuid.Nil: none), in
// leased's order.
func (s *Service) RecordSuccessesTogether(ctx context.Context, leased []Leased) ([]uuid.UUID, error) {
	status := int32(http.StatusNoContent)
	items := make([]success, len(leased))
	now := s.now()
	for i, l := range leased {
		a := Args{AccountID: l.Account, DeliveryID: l.Delivery, Attempt: 1}
		d := db.DeliveryLoadRow{SubscriptionID: l.Subscription}
		items[i] = success{record: successRecord(a, d, outcome{status: &status}, now, true),
			next: db.DeliveryClaimNextParams{AccountID: l.Account, SubscriptionID: l.Subscription,
				Now: now, LeaseUntil: now.Add(s.opt.RescueAfter), MaxInFlight: int32(s.opt.MaxInFlight)}}
	}
	claimed, err := s.recordSuccesses(ctx, nil, items)
	next := make([]uuid.UUID, len(claimed))
	for i, rows := range claimed {
		if len(rows) > 0 {
			next[i] = rows[0].DeliveryID
		}
	}
	return next, err
}

// LeaseLeft is whether a worker holding a lease that ends at leaseEnds goes on to its
// receiver's next delivery (its other conditions met).
func (s *Service) LeaseLeft(leaseEnds time.Time) bool { return s.leaseLeft(Args{leaseEnds: leaseEnds}) }
