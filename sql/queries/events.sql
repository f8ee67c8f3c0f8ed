-- name: EventInsert :exec
INSERT INTO webhook_events (account_id, event_id, event_type, contact_id, payload, occurred_at)
VALUES ($1, $2, $3, $4, $5, $6);

-- name: DeliveryInsert :exec
INSERT INTO webhook_deliveries (
    account_id, delivery_id, subscription_id, event_id, next_attempt_at, created_at, updated_at
) VALUES ($1, $2, $3, $4, $5, $5, $5);

-- name: EventInsertTest :exec
-- A test event: about no contact, left out of the feed.
INSERT INTO webhook_events (account_id, event_id, event_type, contact_id, payload, occurred_at, test)
VALUES ($1, $2, $3, NULL, $4, $5, true);
