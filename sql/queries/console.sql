-- name: ConsoleSessionInsert :exec
INSERT INTO console_sessions (session_hash, account_id, key_id, csrf_token, created_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6);

-- name: ConsoleSessionGet :one
-- A session that has not expired, with its key as it is now: a revoked or expired key ends
-- every session made with it.
SELECT s.account_id, s.key_id, s.csrf_token, s.expires_at, k.name, k.prefix, k.scopes,
       k.expires_at AS key_expires_at, k.allowed_networks, (a.live_account_id IS NULL)::boolean AS live
FROM console_sessions s
JOIN api_keys k ON k.account_id = s.account_id AND k.key_id = s.key_id
JOIN accounts a ON a.account_id = s.account_id
WHERE s.session_hash = $1 AND s.expires_at > $2 AND k.revoked_at IS NULL;

-- name: ConsoleSessionDelete :exec
DELETE FROM console_sessions WHERE session_hash = $1;

-- name: ConsoleSessionPrune :execrows
DELETE FROM console_sessions WHERE expires_at <= $1;

-- name: ContactEvents :many
-- A contact's events, oldest first, for its page in the console.
SELECT event_id, event_type, occurred_at, payload::text AS payload
FROM webhook_events
WHERE account_id = $1 AND contact_id = $2
ORDER BY event_id
LIMIT $3;

-- name: SubscriptionHealth :many
-- The account's subscriptions' attempts over a window: how many, how many succeeded, and
-- their median and 95th-percentile latency.
SELECT d.subscription_id, count(*)::int AS attempts,
       count(*) FILTER (WHERE a.response_status BETWEEN 200 AND 299)::int AS succeeded,
       coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY a.latency_ms), 0)::float8 AS p50_ms,
       coalesce(percentile_cont(0.95) WITHIN GROUP (ORDER BY a.latency_ms), 0)::float8 AS p95_ms
FROM webhook_attempts a
JOIN webhook_deliveries d ON d.account_id = a.account_id AND d.delivery_id = a.delivery_id
WHERE a.account_id = $1 AND a.attempted_at >= $2
GROUP BY d.subscription_id;
