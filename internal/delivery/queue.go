package delivery

import (
	"context"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/queue"
	"github.com/contactd/contactd/internal/store"
)

// The delivery queue is the Pending rows of webhook_deliveries, due at next_attempt_at (the
// convention of package queue). A claim takes due deliveries for the free workers in one
// statement, the event and the subscription included, and each worker makes one attempt and
// records it. A change committed in this process wakes the queue at once.

// claim leases up to max due deliveries for the length of RescueAfter, which exceeds an
// attempt's timeout: a lease ends before its attempt only when its worker died.
func (s *Service) claim(ctx context.Context, max int) ([]queue.Work, bool, error) {
	now := s.now()
	var rows []db.DeliveryClaimRow
	err := s.store.Write(ctx, func(q *db.Queries) (err error) {
		rows, err = q.DeliveryClaim(ctx, db.DeliveryClaimParams{Now: now, LeaseUntil: now.Add(s.opt.RescueAfter), Max: int32(max)})
		return err
	})
	work := make([]queue.Work, len(rows))
	for i, r := range rows {
		a := Args{AccountID: r.AccountID, DeliveryID: r.DeliveryID, Attempt: int(r.Attempts) + 1}
		d := db.DeliveryLoadRow{Status: r.Status, Attempts: r.Attempts, SubscriptionID: r.SubscriptionID,
			EventID: r.EventID, EventType: r.EventType, Payload: r.Payload, Url: r.Url, Secret: r.Secret,
			SecretSealed: r.SecretSealed, PreviousSecretSealed: r.PreviousSecretSealed, PreviousSecretUntil: r.PreviousSecretUntil,
			SubscriptionStatus: r.SubscriptionStatus, ClientSecretSealed: r.ClientSecretSealed}
		work[i] = func(ctx context.Context) { s.attempt(ctx, a, d) }
	}
	return work, len(rows) == max, store.Translate(err)
}
