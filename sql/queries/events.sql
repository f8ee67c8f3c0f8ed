-- name: EventsRecord :one
-- Records events (none, for a replay) and queues the deliveries the fan-out planned, of these
-- events or of recorded ones (record_events), only while the account's subscriptions are at the plan's
-- @subscriptions_version: otherwise it writes nothing and current is false (plan again). An
-- event's contact is NULL for uuid.Nil; @test events are about no contact, and left out of
-- the feed. Payloads come as text: the exact bytes survive ::json.
WITH current AS (
    SELECT 1 FROM accounts a WHERE a.account_id = @account_id::uuid AND a.subscriptions_version = @subscriptions_version::bigint
), recorded AS MATERIALIZED (
    -- the events and their planned deliveries, or a replay's deliveries (migration 00055)
    SELECT record_events(@account_id::uuid, @event_ids::uuid[], @event_types::text[], @event_contact_ids::uuid[],
               @event_payloads::text[], @event_times::timestamptz[], @event_traces::text[], @test::bool,
               @delivery_ids::uuid[], @delivery_event_ids::uuid[], @delivery_subscription_ids::uuid[],
               @delivery_due::timestamptz[], @now::timestamptz, true) AS events
    WHERE EXISTS (SELECT 1 FROM current)
)
SELECT EXISTS (SELECT 1 FROM current) AS current, coalesce((SELECT events FROM recorded), 0)::integer AS events_recorded;

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

-- name: SubscriptionsCountFiltered :exec
-- Adds a process's tally of events filters left out, and of events they could not be
-- evaluated on, to its subscriptions' counts, in id order (so two processes' flushes never
-- wait on each other both ways).
UPDATE webhook_subscriptions s SET filtered_events = s.filtered_events + t.n,
    unevaluated_events = s.unevaluated_events + t.u
FROM (SELECT unnest(@account_ids::uuid[]) AS account_id, unnest(@subscription_ids::uuid[]) AS subscription_id,
             unnest(@counts::bigint[]) AS n, unnest(@unevaluated::bigint[]) AS u
      ORDER BY 1, 2) t
WHERE s.account_id = t.account_id AND s.subscription_id = t.subscription_id;

-- name: SubscribersLoad :many
-- The account's live subscriptions with their filters, and the version of them
-- (accounts.subscriptions_version) in the same snapshot: event.Audience. One row with no
-- subscription when it has none; none when the account is gone.
SELECT a.subscriptions_version, s.subscription_id, s.event_type, s.filter
FROM accounts a
LEFT JOIN webhook_subscriptions s ON s.account_id = a.account_id AND s.status <> 'Removed'
WHERE a.account_id = @account_id
ORDER BY s.subscription_id;

-- name: SubscriptionsVersionBump :exec
-- The account's live subscriptions or their filters changed in this transaction: statements
-- planned with the older version queue nothing (migration 00040).
UPDATE accounts SET subscriptions_version = subscriptions_version + 1 WHERE account_id = @account_id;

-- name: SubscriptionsChangedNotify :exec
-- Tells every contactd process (event.Subscribers) that the account's live subscriptions
-- changed; '' means any account. Delivered at commit.
SELECT pg_notify('contactd_subscriptions_changed', sqlc.arg('account_id')::text);
