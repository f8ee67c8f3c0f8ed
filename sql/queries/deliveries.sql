-- name: DeliveryClaim :many
-- Leases up to @max due deliveries to the caller until @lease_until, with everything their
-- attempts need; SKIP LOCKED lets workers in several processes claim side by side. A lease
-- that ends without a recorded attempt (the worker died) makes the delivery due again, for
-- the same attempt.
UPDATE webhook_deliveries d
SET next_attempt_at = @lease_until::timestamptz
FROM (
    SELECT q.account_id, q.delivery_id FROM webhook_deliveries q
    WHERE q.status = 'Pending' AND q.next_attempt_at <= @now::timestamptz
    ORDER BY q.next_attempt_at
    LIMIT @max
    FOR UPDATE SKIP LOCKED
) due, webhook_events e, webhook_subscriptions s
WHERE d.account_id = due.account_id AND d.delivery_id = due.delivery_id
  AND e.account_id = d.account_id AND e.event_id = d.event_id
  AND s.account_id = d.account_id AND s.subscription_id = d.subscription_id
RETURNING d.account_id, d.delivery_id, d.status, d.attempts, d.subscription_id, e.event_id, e.event_type,
    e.payload::text AS payload, s.url, s.secret, s.secret_sealed, s.previous_secret_sealed, s.previous_secret_until,
    s.status AS subscription_status,
    (SELECT a.client_secret_sealed FROM accounts a WHERE a.account_id = d.account_id) AS client_secret_sealed;

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
SET attempts = @attempt, status = @status, next_attempt_at = sqlc.narg('next_attempt_at'), updated_at = @now
WHERE account_id = @account_id AND delivery_id = @delivery_id;

-- name: DeliveryRecordSuccess :exec
-- A successful attempt in one statement (no transaction round trips): the attempt, the
-- delivery Succeeded, and the subscription healthy again. The subscription row is written only
-- when the success changes something, so workers delivering to one subscription do not line
-- up on its row lock; last_success_at, read only by the sweep of Failing subscriptions five
-- days on, is refreshed when older than @refresh_before (a minute).
WITH attempt AS (
    INSERT INTO webhook_attempts (
        account_id, delivery_id, attempt, attempted_at, response_status, latency_ms
    ) VALUES (@account_id, @delivery_id, @attempt, @now, @response_status, @latency_ms)
    ON CONFLICT (account_id, delivery_id, attempt) DO NOTHING
), delivery AS (
    UPDATE webhook_deliveries d
    SET attempts = @attempt, status = 'Succeeded', next_attempt_at = NULL, updated_at = @now
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
    account_id, delivery_id, attempt, attempted_at, response_status, latency_ms, error, next_attempt_at
) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (account_id, delivery_id, attempt) DO NOTHING;

-- name: AttemptsList :many
SELECT a.delivery_id, a.attempt, a.attempted_at, a.response_status, a.latency_ms, a.error,
       a.next_attempt_at, e.event_id, e.event_type
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
