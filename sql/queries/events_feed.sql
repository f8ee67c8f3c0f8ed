-- name: EventsFeed :many
-- The account's events after the cursor (@after_xid, @after_event), in the order of the
-- transactions that wrote them, and only those of transactions below this statement's
-- snapshot xmin: every transaction that could still add an event before them has finished,
-- so an event committed late can never land behind a cursor already handed out. The page
-- ends once its events reach @max_bytes (the event that crosses it included, so at least
-- one), so a page of big events costs its reader about @max_bytes, not @row_limit of them.
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
          AND xid < pg_snapshot_xmin(pg_current_snapshot())
          AND NOT test
        ORDER BY webhook_events.xid, event_id -- the column, not the text alias
        LIMIT @row_limit
    ) page
) sized
WHERE upto - octet_length(payload) < @max_bytes::bigint
ORDER BY xid, event_id;

-- name: EventGet :one
SELECT payload::text AS payload FROM webhook_events WHERE account_id = $1 AND event_id = $2 AND NOT test;

-- name: EventsForReplay :many
-- A page of the account's events of @event_type in [@since, @until) after the cursor, in the
-- feed's order: their ids, and their payloads @with_payloads (for a filter to be evaluated on;
-- '' otherwise).
-- @since_id and @until_id bound the events' ids (of their time: a bit wider than the window,
-- see delivery.Replay), so only the partitions of the window's days are read.
SELECT e.event_id, e.xid::text AS position_xid, CASE WHEN @with_payloads::bool THEN e.payload::text ELSE '' END AS payload
FROM webhook_events e
WHERE e.account_id = @account_id AND e.event_type = @event_type
  AND e.occurred_at >= @since::timestamptz AND e.occurred_at < @until::timestamptz AND NOT e.test
  AND e.event_id >= @since_id AND e.event_id < @until_id
  AND (e.xid, e.event_id) > ((@after_xid::text)::xid8, @after_event::uuid)
ORDER BY e.xid, e.event_id
LIMIT @row_limit;

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

-- name: ReplayRoom :one
-- For a replay's bounds: how many events of the subscription's type occurred in the window
-- (counted up to one more than the bound), and how many of its deliveries are Pending
-- (counted up to the bound). Each count stops at its bound, so it costs at most that many
-- index entries however big the account.
SELECT
    (SELECT count(*)::int FROM (
        SELECT 1 FROM webhook_events e JOIN webhook_subscriptions s
          ON s.account_id = e.account_id AND s.event_type = e.event_type
        WHERE s.account_id = @account_id AND s.subscription_id = @subscription_id
          AND e.occurred_at >= @since::timestamptz AND e.occurred_at < @until::timestamptz AND NOT e.test
          AND e.event_id >= @since_id AND e.event_id < @until_id
        LIMIT @events_limit::int) w) AS events,
    (SELECT count(*)::int FROM (
        SELECT 1 FROM webhook_deliveries d
        WHERE d.account_id = @account_id AND d.subscription_id = @subscription_id AND d.status = 'Pending'
        LIMIT @pending_limit::int) p) AS pending;
