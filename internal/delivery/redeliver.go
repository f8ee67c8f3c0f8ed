package delivery

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/platform/ids"
	"github.com/contactd/contactd/internal/platform/store"
)

// Redeliver queues one more attempt of a delivery, now.
func (s *Service) Redeliver(ctx context.Context, account uuid.UUID, rawSub, rawDelivery string) (Delivery, error) {
	sub, err := s.subscription(ctx, account, rawSub)
	if err != nil {
		return Delivery{}, err
	}
	id, ok := ids.Parse(rawDelivery)
	if !ok {
		return Delivery{}, ErrDeliveryNotFound
	}
	var d Delivery
	err = s.store.InTx(ctx, func(tx store.Tx) error {
		subRow, err := tx.SubscriptionGet(ctx, db.SubscriptionGetParams{AccountID: account, SubscriptionID: sub})
		if err != nil {
			return err
		}
		if subRow.Status == "Removed" {
			return apperr.Invalid(apperr.Field("path.subscriptionId", "status", "the subscription is removed"))
		}
		row, err := tx.DeliveryGet(ctx, db.DeliveryGetParams{AccountID: account, SubscriptionID: sub, DeliveryID: id})
		if errors.Is(store.Translate(err), apperr.ErrNoRows) {
			return ErrDeliveryNotFound
		} else if err != nil {
			return err
		}
		now := s.now()
		if err := tx.DeliveryRequeue(ctx, db.DeliveryRequeueParams{AccountID: account, DeliveryID: id, Now: &now}); err != nil {
			return err
		}
		d = Delivery{ID: id, EventID: row.EventID, EventType: row.EventType, Status: "Pending", Attempts: int(row.Attempts), NextAttemptAt: &now}
		tx.AfterCommit(s.queue.Wake)
		return nil
	})
	return d, err
}
