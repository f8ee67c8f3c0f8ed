-- name: EventsRecord :one
-- Records events (none, for a replay) and queues the deliveries the fan-out planned, of these
-- events or of recorded ones, only while the account's subscriptions are at the plan's
-- @subscriptions_version: otherwise it writes nothing and current is false (plan again). An
-- event's contact is NULL for uuid.Nil; @test events are about no contact, and left out of
-- the feed. Payloads come as text: the exact bytes survive ::json.
WITH current AS (
    SELECT 1 FROM accounts a WHERE a.account_id = @account_id::uuid AND a.subscriptions_version = @subscriptions_version::bigint
), event AS (
    INSERT INTO webhook_events (account_id, event_id, event_type, contact_id, payload, occurred_at, test, trace)
    SELECT @account_id, e.event_id, e.event_type,
           CASE WHEN NOT @test::bool THEN nullif(e.contact_id, '00000000-0000-0000-0000-000000000000'::uuid) END,
           e.payload::json, e.occurred_at, @test::bool, nullif(e.trace, '')
    FROM (SELECT unnest(@event_ids::uuid[]) AS event_id, unnest(@event_types::text[]) AS event_type,
                 unnest(@event_contact_ids::uuid[]) AS contact_id, unnest(@event_payloads::text[]) AS payload,
                 unnest(@event_times::timestamptz[]) AS occurred_at, unnest(@event_traces::text[]) AS trace) e
    WHERE EXISTS (SELECT 1 FROM current)
), delivery AS (
    INSERT INTO webhook_deliveries (account_id, delivery_id, subscription_id, event_id, next_attempt_at, created_at, updated_at)
    SELECT @account_id, d.delivery_id, d.subscription_id, d.event_id, d.due, @now::timestamptz, @now::timestamptz
    FROM (SELECT unnest(@delivery_ids::uuid[]) AS delivery_id, unnest(@delivery_event_ids::uuid[]) AS event_id,
                 unnest(@delivery_subscription_ids::uuid[]) AS subscription_id, unnest(@delivery_due::timestamptz[]) AS due) d
    WHERE EXISTS (SELECT 1 FROM current)
)
SELECT EXISTS (SELECT 1 FROM current) AS current;

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
