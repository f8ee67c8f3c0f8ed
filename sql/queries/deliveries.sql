-- name: DeliveryClaim :many
-- Leases up to @max due deliveries to the caller, a few per receiver at most: see
-- claim_deliveries (migration 00012), run alone by claim_deliveries_alone (00022). Commits
-- without waiting for the WAL flush (the lazy row: see DeliveryRecordSuccess).
SELECT c.account_id::uuid AS account_id, c.delivery_id::uuid AS delivery_id, c.status::text AS status,
    c.attempts::int AS attempts, c.subscription_id::uuid AS subscription_id, c.event_id::uuid AS event_id,
    c.event_type::text AS event_type, c.payload::text AS payload, c.url::text AS url,
    -- sqlc cannot see the function's NULLs: absent is '' and the zero time here
    coalesce(c.secret, '')::text AS secret, coalesce(c.secret_sealed, '')::text AS secret_sealed,
    coalesce(c.previous_secret_sealed, '')::text AS previous_secret_sealed,
    coalesce(c.previous_secret_until, '0001-01-01 00:00:00+00')::timestamptz AS previous_secret_until,
    c.subscription_status::text AS subscription_status,
    coalesce(c.client_secret_sealed, '')::text AS client_secret_sealed
FROM (SELECT set_config('synchronous_commit', 'off', true)) lazy,
    claim_deliveries_alone(@now::timestamptz, @lease_until::timestamptz, @max::int,
    @max_in_flight::int, @throttle_share::float8) c;

-- name: DeliveryClaimNext :many
-- Leases the subscription's oldest due delivery while its receiver is below its limit: see
-- claim_next_delivery (migration 00022). Commits without waiting for the WAL flush (the lazy
-- row: see DeliveryRecordSuccess).
SELECT c.account_id::uuid AS account_id, c.delivery_id::uuid AS delivery_id, c.status::text AS status,
    c.attempts::int AS attempts, c.subscription_id::uuid AS subscription_id, c.event_id::uuid AS event_id,
    c.event_type::text AS event_type, c.payload::text AS payload, c.url::text AS url,
    -- sqlc cannot see the function's NULLs: absent is '' and the zero time here
    coalesce(c.secret, '')::text AS secret, coalesce(c.secret_sealed, '')::text AS secret_sealed,
    coalesce(c.previous_secret_sealed, '')::text AS previous_secret_sealed,
    coalesce(c.previous_secret_until, '0001-01-01 00:00:00+00')::timestamptz AS previous_secret_until,
    c.subscription_status::text AS subscription_status,
    coalesce(c.client_secret_sealed, '')::text AS client_secret_sealed
FROM (SELECT set_config('synchronous_commit', 'off', true)) lazy,
    claim_next_delivery(@account_id::uuid, @subscription_id::uuid, @now::timestamptz, @lease_until::timestamptz,
    @max_in_flight::int) c;

-- name: DeliveryLoad :one
-- Everything one attempt needs, in one round trip.
SELECT d.status, d.attempts, d.subscription_id, e.event_id, e.event_type, e.payload::text AS payload,
       s.url, s.secret, s.secret_sealed, s.previous_secret_sealed, s.previous_secret_until,
       s.status AS subscription_status,
       (SELECT a.client_secret_sealed FROM accounts a WHERE a.account_id = d.account_id) AS client_secret_sealed
FROM webhook_deliveries d
JOIN webhook_events e ON e.account_id = d.account_id AND e.event_id = d.event_id
JOIN webhook_subscriptions s ON s.account_id = d.account_id AND s.subscription_id = d.subscription_id
WHERE d.account_id = $1 AND d.delivery_id = $2;

-- name: DeliveryRecordAttempt :exec
UPDATE webhook_deliveries
SET attempts = @attempt, status = @status, next_attempt_at = sqlc.narg('next_attempt_at'), updated_at = @now,
    leased_until = NULL
WHERE account_id = @account_id AND delivery_id = @delivery_id;

-- name: DeliveryRecordSuccess :exec
-- A successful attempt in one statement (no transaction round trips): the attempt, the
-- delivery Succeeded, and the subscription healthy again. The subscription row is written only
-- when the success changes something, so workers delivering to one subscription do not line
-- up on its row lock; last_success_at, read only by the sweep of Failing subscriptions five
-- days on, is refreshed when older than @refresh_before (a minute).
-- The statement commits without waiting for its WAL to reach the disk (synchronous_commit
-- off for its transaction, set by the "lazy" row the attempt is inserted from: a
-- data-modifying CTE always runs). A crash of PostgreSQL can lose the last fraction of a
-- second of these records, and the delivery is then made again: the at-least-once promise,
-- which receivers meet with the webhook-id. The changes that create events and deliveries
-- still wait for the flush, and so does the record of a failure.
WITH attempt AS (
    INSERT INTO webhook_attempts (
        account_id, delivery_id, attempt, attempted_at, response_status, latency_ms, response_excerpt
    ) SELECT @account_id, @delivery_id, @attempt, @now, @response_status, @latency_ms, sqlc.narg('response_excerpt')
    FROM (SELECT set_config('synchronous_commit', 'off', true)) lazy
    ON CONFLICT (account_id, delivery_id, attempt) DO NOTHING
), delivery AS (
    UPDATE webhook_deliveries d
    SET attempts = @attempt, status = 'Succeeded', next_attempt_at = NULL, updated_at = @now, leased_until = NULL
    WHERE d.account_id = @account_id AND d.delivery_id = @delivery_id
)
UPDATE webhook_subscriptions s
SET consecutive_failures = 0, last_success_at = @now, failing_since = NULL,
    status = CASE WHEN s.status = 'Failing' THEN 'Active' ELSE s.status END,
    updated_at = CASE WHEN s.status = 'Failing' THEN @now ELSE s.updated_at END
WHERE s.account_id = @account_id AND s.subscription_id = @subscription_id AND s.status <> 'Removed'
  AND (s.consecutive_failures <> 0 OR s.status = 'Failing' OR s.last_success_at IS NULL
       OR s.last_success_at < @refresh_before);

-- name: AttemptInsert :exec
INSERT INTO webhook_attempts (
    account_id, delivery_id, attempt, attempted_at, response_status, latency_ms, error, next_attempt_at, response_excerpt
) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (account_id, delivery_id, attempt) DO NOTHING;

-- name: AttemptsList :many
SELECT a.delivery_id, a.attempt, a.attempted_at, a.response_status, a.latency_ms, a.error,
       a.next_attempt_at, e.event_id, e.event_type, a.response_excerpt
FROM webhook_attempts a
JOIN webhook_deliveries d ON d.account_id = a.account_id AND d.delivery_id = a.delivery_id
JOIN webhook_events e ON e.account_id = d.account_id AND e.event_id = d.event_id
WHERE a.account_id = @account_id AND d.subscription_id = @subscription_id
  AND (NOT @has_cursor::bool OR (a.attempted_at, a.delivery_id, a.attempt) < (@cursor_at::timestamptz, @cursor_delivery::uuid, @cursor_attempt::int))
ORDER BY a.attempted_at DESC, a.delivery_id DESC, a.attempt DESC
LIMIT @row_limit;

-- name: DeliveryGet :one
SELECT d.*, e.event_type FROM webhook_deliveries d
JOIN webhook_events e ON e.account_id = d.account_id AND e.event_id = d.event_id
WHERE d.account_id = $1 AND d.subscription_id = $2 AND d.delivery_id = $3;

-- name: DeliveryRequeue :exec
UPDATE webhook_deliveries SET status = 'Pending', next_attempt_at = @now, updated_at = @now
WHERE account_id = @account_id AND delivery_id = @delivery_id;

-- name: SubscriptionHoldBack :exec
-- A receiver asked for time (Retry-After on a 429 or 503): the subscription's attempts wait
-- until @until, not only the one that was refused.
UPDATE webhook_subscriptions SET next_send_at = greatest(coalesce(next_send_at, @until::timestamptz), @until::timestamptz)
WHERE account_id = @account_id AND subscription_id = @subscription_id;

-- name: AttemptsForgetResponses :execrows
-- Clears the response excerpts recorded for the deliveries of @event_ids, for an erasure: a
-- receiver may have echoed what it was sent. (No index leads from an event to its
-- deliveries: this reads the account's deliveries, once per erasure.)
UPDATE webhook_attempts a SET response_excerpt = NULL
FROM webhook_deliveries d
WHERE d.account_id = @account_id AND d.event_id = ANY(@event_ids::uuid[])
  AND a.account_id = d.account_id AND a.delivery_id = d.delivery_id
  AND a.response_excerpt IS NOT NULL;
