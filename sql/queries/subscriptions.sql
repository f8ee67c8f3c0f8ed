-- name: SubscriptionCountLive :one
SELECT count(*) FROM webhook_subscriptions
WHERE account_id = $1 AND event_type = $2 AND status <> 'Removed';

-- name: SubscriptionInsert :one
INSERT INTO webhook_subscriptions (
    account_id, subscription_id, url, event_type, secret_sealed, max_per_second, filter, filter_path, created_at, updated_at
) VALUES (@account_id, @subscription_id, @url, @event_type, @secret_sealed, sqlc.narg('max_per_second'),
          sqlc.narg('filter')::jsonb, (sqlc.narg('filter_path')::text)::jsonpath, @created_at, @created_at)
RETURNING *;

-- name: SubscriptionSetThrottle :one
-- Sets (or, NULL, lifts) the subscription's throttle; a held-back send time of the old pace
-- goes with it (a pause stays).
UPDATE webhook_subscriptions
SET max_per_second = sqlc.narg('max_per_second'),
    next_send_at = CASE WHEN paused_at IS NULL THEN NULL ELSE '9999-12-31 00:00:00+00'::timestamptz END, updated_at = @now
WHERE account_id = @account_id AND subscription_id = @subscription_id
RETURNING *;

-- name: SubscriptionSetPaused :one
-- Pauses the subscription (its deliveries wait) or resumes it (they go at once).
UPDATE webhook_subscriptions
SET paused_at = CASE WHEN sqlc.arg('paused')::boolean THEN coalesce(paused_at, sqlc.arg('now')::timestamptz) END,
    next_send_at = CASE WHEN sqlc.arg('paused')::boolean THEN '9999-12-31 00:00:00+00'::timestamptz END,
    updated_at = sqlc.arg('now')::timestamptz
WHERE account_id = sqlc.arg('account_id') AND subscription_id = sqlc.arg('subscription_id')
RETURNING *;

-- name: SubscriptionList :many
SELECT * FROM webhook_subscriptions
WHERE account_id = $1
ORDER BY created_at DESC, subscription_id DESC;

-- name: SubscriptionSetFilter :one
-- Sets (or, NULL, lifts) the subscription's filter: the events it queues from now on.
UPDATE webhook_subscriptions
SET filter = sqlc.narg('filter')::jsonb, filter_path = (sqlc.narg('filter_path')::text)::jsonpath, updated_at = @now
WHERE account_id = @account_id AND subscription_id = @subscription_id
RETURNING *;

-- name: SubscriptionRemove :execrows
-- Removes the subscription for @reason (Deleted, Gone); removing it again keeps the first
-- removal's reason and time.
UPDATE webhook_subscriptions
SET status = 'Removed', updated_at = CASE WHEN status = 'Removed' THEN updated_at ELSE @now END,
    removed_reason = CASE WHEN status = 'Removed' THEN removed_reason ELSE @reason::text END
WHERE account_id = @account_id AND subscription_id = @subscription_id;

-- name: SubscriptionGet :one
SELECT * FROM webhook_subscriptions WHERE account_id = $1 AND subscription_id = $2;

-- name: AccountLock :exec
-- Serialises changes that enforce per-account limits (subscriptions per event type).
SELECT account_id FROM accounts WHERE account_id = $1 FOR UPDATE;
