-- name: SubscriptionCountLive :one
SELECT count(*) FROM webhook_subscriptions
WHERE account_id = $1 AND event_type = $2 AND status <> 'Removed';

-- name: SubscriptionInsert :one
INSERT INTO webhook_subscriptions (
    account_id, subscription_id, url, event_type, secret_sealed, max_per_second, created_at, updated_at
) VALUES (@account_id, @subscription_id, @url, @event_type, @secret_sealed, sqlc.narg('max_per_second'), @created_at, @created_at)
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

-- name: SubscriptionsForEvent :many
SELECT subscription_id FROM webhook_subscriptions
WHERE account_id = $1 AND event_type = $2 AND status <> 'Removed'
ORDER BY subscription_id;

-- name: SubscriptionRemove :execrows
UPDATE webhook_subscriptions
SET status = 'Removed', updated_at = CASE WHEN status = 'Removed' THEN updated_at ELSE @now END
WHERE account_id = @account_id AND subscription_id = @subscription_id;

-- name: SubscriptionGet :one
SELECT * FROM webhook_subscriptions WHERE account_id = $1 AND subscription_id = $2;

-- name: SubscriptionRecordFailure :exec
-- The third failure in a row turns an Active subscription Failing.
UPDATE webhook_subscriptions
SET consecutive_failures = consecutive_failures + 1,
    status = CASE WHEN status = 'Active' AND consecutive_failures + 1 >= @failing_after::int THEN 'Failing' ELSE status END,
    failing_since = CASE WHEN status = 'Active' AND consecutive_failures + 1 >= @failing_after::int THEN @now ELSE failing_since END,
    updated_at = CASE WHEN status = 'Active' AND consecutive_failures + 1 >= @failing_after::int THEN @now ELSE updated_at END
WHERE account_id = @account_id AND subscription_id = @subscription_id AND status <> 'Removed';

-- name: SubscriptionsSweepFailing :execrows
-- Maintenance across accounts: Failing subscriptions without a success since the cutoff
-- are removed.
UPDATE webhook_subscriptions
SET status = 'Removed', updated_at = @now
WHERE status = 'Failing' AND coalesce(last_success_at, created_at) < @cutoff;

-- name: SubscriptionEventTypesLive :many
-- The event types the account has live subscriptions to (webhook.Subscribers' cache).
SELECT DISTINCT event_type FROM webhook_subscriptions
WHERE account_id = $1 AND status <> 'Removed';

-- name: SubscriptionsChangedNotify :exec
-- Tells every contactd process (webhook.Subscribers) that the account's live subscriptions
-- changed; '' means any account. Delivered at commit.
SELECT pg_notify('contactd_subscriptions_changed', sqlc.arg('account_id')::text);
