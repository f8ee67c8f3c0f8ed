package testkit

import (
	"context"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/delivery"
)

// DeliverySucceed records one success (DeliverySucceedMany, which the workers send in groups)
// and returns the delivery it claimed, if any.
func DeliverySucceed(ctx context.Context, q *db.Queries, s delivery.Success) ([]db.DeliveryClaimRow, error) {
	rows, err := delivery.SendSuccesses(ctx, q, []delivery.Success{s})
	if err != nil {
		return nil, err
	}
	return rows[0], nil
}
