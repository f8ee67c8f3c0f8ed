package testkit

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"
)

// SubscribeUnheard adds a live subscription of typ to the account as a change made elsewhere
// would (its row, a copy of like's with a new id; the account's next subscriptions_version),
// but tells no process: a cached audience stays as it was, now stale. It returns the new
// subscription's id.
func (a *API) SubscribeUnheard(t testing.TB, account uuid.UUID, like, typ string) string {
	t.Helper()
	var sub string
	if err := a.Store.Pool.QueryRow(context.Background(), `WITH s AS (
			INSERT INTO webhook_subscriptions SELECT * FROM jsonb_populate_record(NULL::webhook_subscriptions,
				(SELECT to_jsonb(s) || jsonb_build_object('subscription_id', gen_random_uuid(), 'event_type', $2::text)
				 FROM webhook_subscriptions s WHERE s.subscription_id = $1::uuid))
			RETURNING subscription_id
		), bumped AS (UPDATE accounts SET subscriptions_version = subscriptions_version + 1 WHERE account_id = $3)
		SELECT subscription_id::text FROM s`, like, typ, account).Scan(&sub); err != nil {
		t.Fatal(err)
	}
	return sub
}

// HeaviestFilter is the costliest filter a subscription may save that still wants every event
// of its type: 32 conditions, one an $in of 64 values, each evaluated on every event.
func HeaviestFilter(eventType string) map[string]any {
	values := []any{eventType}
	for i := range 63 {
		values = append(values, fmt.Sprintf("Other%d", i))
	}
	conditions := []any{map[string]any{"eventType": map[string]any{"$in": values}, "eventDate": map[string]any{"$exists": true}}}
	for i := range 15 { // $and takes 16 filters at most
		conditions = append(conditions, map[string]any{fmt.Sprintf("data.absent%d", i): map[string]any{"$exists": false},
			fmt.Sprintf("data.contactInfo.absent%d", i): map[string]any{"$neq": "x"}})
	}
	return map[string]any{"$and": conditions}
}
