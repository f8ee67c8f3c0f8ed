-- name: EventsFeedHorizon :one
-- Where the account's feed may read up to now (feed_horizon, migration 00056), read before
-- the page's statement, whose snapshot is then later than every lock this one saw released.
SELECT feed_horizon(@account_id::uuid)::text AS horizon;

-- name: EventsFeed :many
-- The account's events after the cursor (@after_xid, @after_event), in the order of their
-- places (webhook_events.xid, given by record_events), and only those placed below
-- @horizon (EventsFeedHorizon, read first): every transaction that could still add an event
-- before them has finished, so an event committed late can never land behind a cursor already
-- handed out. The page ends once its events reach @max_bytes (the event that crosses it
-- included, so at least one), so a page of big events costs its reader about @max_bytes, not
-- @row_limit of them.
SELECT event_id, event_type, payload, position_xid, upto
FROM (
    SELECT event_id, event_type, payload, position_xid, xid,
           sum(octet_length(payload)) OVER (ORDER BY xid, event_id ROWS UNBOUNDED PRECEDING)::bigint AS upto
    FROM (
        SELECT /* plan per call */ event_id, event_type, payload::text AS payload, xid::text AS position_xid, xid
        FROM webhook_events
        WHERE account_id = @account_id
          AND (sqlc.narg('event_type')::text IS NULL OR event_type = sqlc.narg('event_type')::text)
          AND (xid, event_id) > ((@after_xid::text)::xid8, @after_event::uuid)
          AND xid < (@horizon::text)::xid8
          AND NOT test
        ORDER BY webhook_events.xid, event_id -- the column, not the text alias
        LIMIT @row_limit
    ) page
) sized
WHERE upto - octet_length(payload) < @max_bytes::bigint
ORDER BY xid, event_id;

-- name: EventGet :one
SELECT payload::text AS payload FROM webhook_events WHERE account_id = $1 AND event_id = $2 AND NOT test;

-- name: EventsPrune :execrows
-- Deletes up to @batch events of the default partition that occurred before @before, across
-- accounts: the retention task calls it until it deletes fewer. (The day partitions are
-- dropped whole: store.DropEventPartitions.)
DELETE FROM webhook_events_default
WHERE ctid = ANY(ARRAY(SELECT ctid FROM webhook_events_default WHERE occurred_at < @before::timestamptz LIMIT @batch));

-- name: DeliveriesPrune :execrows
-- Deletes up to @batch deliveries queued before @before (their attempts go with them), across
-- accounts: every event they could be about is past the retention too.
DELETE FROM webhook_deliveries
WHERE ctid = ANY(ARRAY(SELECT ctid FROM webhook_deliveries WHERE created_at < @before::timestamptz LIMIT @batch));

-- name: DeliveriesOrphanedFail :execrows
-- Fails the pending deliveries whose event the retention has removed (one replayed or held by
-- a paused subscription until then), across accounts: the claims join the events, so they
-- could never be sent, and would stay due at the head of their subscription's queue. (OFFSET
-- 0 keeps the check a probe of each pending delivery's event by its key, in its day's
-- partition: as an anti-join PostgreSQL may hash every event kept.)
UPDATE webhook_deliveries d SET status = 'Failed', next_attempt_at = NULL, updated_at = @now
WHERE d.status = 'Pending' AND (d.leased_until IS NULL OR d.leased_until < @now)
  AND NOT EXISTS (SELECT 1 FROM webhook_events e WHERE e.account_id = d.account_id AND e.event_id = d.event_id OFFSET 0);

-- name: ContactEvents :many
-- A contact's events, oldest first, for its page in the console.
SELECT event_id, event_type, occurred_at, payload::text AS payload
FROM webhook_events
WHERE account_id = $1 AND contact_id = $2
ORDER BY event_id
LIMIT $3;
