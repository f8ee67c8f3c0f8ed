-- name: EventInsert :exec
INSERT INTO webhook_events (account_id, event_id, event_type, contact_id, payload, occurred_at, trace)
VALUES ($1, $2, $3, $4, $5, $6, sqlc.narg('trace'));

-- name: DeliveryInsert :exec
INSERT INTO webhook_deliveries (
    account_id, delivery_id, subscription_id, event_id, next_attempt_at, created_at, updated_at
) VALUES ($1, $2, $3, $4, $5, $5, $5);

-- name: EventInsertTest :exec
-- A test event: about no contact, left out of the feed.
INSERT INTO webhook_events (account_id, event_id, event_type, contact_id, payload, occurred_at, test, trace)
VALUES ($1, $2, $3, NULL, $4, $5, true, sqlc.narg('trace'));

-- name: EventTrace :one
-- The traceparent an event's delivery attempt continues (tracing on only).
SELECT trace FROM webhook_events WHERE account_id = @account_id AND event_id = @event_id;

-- name: EventsAbout :many
-- The events about a contact (test events are about none), locked, for its erasure.
SELECT event_id, event_type, occurred_at, payload::text AS payload FROM webhook_events
WHERE account_id = @account_id AND contact_id = @contact_id AND NOT test
ORDER BY event_id
FOR UPDATE;

-- name: EventsRedact :execrows
-- Replaces the payloads of @event_ids with @payloads, one for one: an erased contact's events
-- become tombstones.
UPDATE webhook_events e SET payload = r.payload::json
FROM (SELECT unnest(@event_ids::uuid[]) AS event_id, unnest(@payloads::text[]) AS payload) r
WHERE e.account_id = @account_id AND e.event_id = r.event_id;
