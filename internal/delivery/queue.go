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

// throttleShare is the part of a second's worth of a throttled subscription's deliveries one
// claim may take: about what arrives between two claims of an idle queue (PollEvery, 250 ms).
const throttleShare = 0.25

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// claim leases up to max due deliveries for the length of RescueAfter, which exceeds an
// attempt's timeout: a lease ends before its attempt only when its worker died.
func (s *Service) claim(ctx context.Context, max int) ([]queue.Work, bool, error) {
	now := s.now()
	var rows []db.DeliveryClaimRow
	err := s.store.Write(ctx, func(q *db.Queries) (err error) {
		rows, err = q.DeliveryClaim(ctx, db.DeliveryClaimParams{Now: now, LeaseUntil: now.Add(s.opt.RescueAfter), Max: int32(max),
			MaxInFlight: int32(s.opt.MaxInFlight), ScanLimit: int32(8 * max), ThrottleShare: throttleShare})
		return err
	})
	work := make([]queue.Work, len(rows))
	for i, r := range rows {
		a := Args{AccountID: r.AccountID, DeliveryID: r.DeliveryID, Attempt: int(r.Attempts) + 1}
		d := db.DeliveryLoadRow{Status: r.Status, Attempts: r.Attempts, SubscriptionID: r.SubscriptionID,
			EventID: r.EventID, EventType: r.EventType, Payload: r.Payload, Url: r.Url, Secret: nonEmpty(r.Secret),
			SecretSealed: nonEmpty(r.SecretSealed), PreviousSecretSealed: nonEmpty(r.PreviousSecretSealed),
			SubscriptionStatus: r.SubscriptionStatus, ClientSecretSealed: nonEmpty(r.ClientSecretSealed)}
		if !r.PreviousSecretUntil.IsZero() {
			d.PreviousSecretUntil = &r.PreviousSecretUntil
		}
		work[i] = func(ctx context.Context) { s.attempt(ctx, a, d) }
	}
	return work, len(rows) == max, store.Translate(err)
}
