package testkit

import (
	"context"

	"github.com/contactd/contactd/gen/db"
)

// DeliverySucceed runs one DeliverySucceed (a batch statement, which the workers send in
// groups) and returns its rows.
func DeliverySucceed(ctx context.Context, q *db.Queries, p db.DeliverySucceedParams) ([]db.DeliverySucceedRow, error) {
	var rows []db.DeliverySucceedRow
	var failed error
	results := q.DeliverySucceed(ctx, []db.DeliverySucceedParams{p})
	results.Query(func(_ int, got []db.DeliverySucceedRow, err error) { rows, failed = got, err })
	if err := results.Close(); failed == nil {
		failed = err
	}
	return rows, failed
}
