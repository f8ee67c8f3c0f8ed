-- name: TagsSet :exec
UPDATE contacts SET tags = $3, updated_at = $4
WHERE account_id = $1 AND contact_id = $2;

-- name: TagsGet :one
SELECT tags, email, assigned_user_email_id FROM contacts WHERE account_id = $1 AND contact_id = $2;

-- name: TagsSwap :batchone
-- Compare-and-swap: sets the tags only if they are still the ones the change was computed
-- from (no row otherwise), and records the change's events (TagsAdded, TagsRemoved) with it
-- and, with @queue_deliveries (the account may subscribe to one of them), their deliveries to
-- the account's live subscriptions of their types whose filters want them (filtered_out: the
-- subscriptions that did not): a tag change needs no transaction and no
-- lock, and goes to PostgreSQL with the other swaps in flight.
WITH swapped AS (
    UPDATE contacts c SET tags = @tags, updated_at = @updated_at
    WHERE c.account_id = @account_id AND c.contact_id = @contact_id AND c.tags = @previous::text[]
    RETURNING c.account_id, c.contact_id
), events AS (
    INSERT INTO webhook_events (account_id, event_id, event_type, contact_id, payload, occurred_at, trace)
    SELECT s.account_id, unnest(@event_ids::uuid[]), unnest(@event_types::text[]), s.contact_id,
           unnest(@event_payloads::text[])::json, @updated_at, nullif(unnest(@event_traces::text[]), '')
    FROM swapped s
    RETURNING account_id, event_id, event_type, occurred_at, payload
), target AS (
    SELECT e.account_id, e.event_id, e.occurred_at, s.subscription_id, webhook_filter_matches(s.filter_path, e.payload) AS wanted
    FROM events e
    JOIN webhook_subscriptions s ON s.account_id = e.account_id AND s.event_type = e.event_type AND s.status <> 'Removed'
    WHERE @queue_deliveries::bool
), delivery AS (
    INSERT INTO webhook_deliveries (account_id, delivery_id, subscription_id, event_id, next_attempt_at, created_at, updated_at)
    SELECT account_id, uuid_v7(occurred_at), subscription_id, event_id, occurred_at, occurred_at, occurred_at
    FROM target WHERE wanted
)
SELECT contact_id, ARRAY(SELECT subscription_id FROM target WHERE NOT wanted)::uuid[] AS filtered_out FROM swapped;
