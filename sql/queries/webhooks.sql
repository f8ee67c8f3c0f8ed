-- name: SubscriptionCountLive :one
SELECT count(*) FROM webhook_subscriptions
WHERE account_id = $1 AND event_type = $2 AND status <> 'Removed';

-- name: SubscriptionInsert :one
INSERT INTO webhook_subscriptions (
    account_id, subscription_id, url, event_type, secret, created_at, updated_at
) VALUES ($1, $2, $3, $4, $5, $6, $6)
RETURNING *;

-- name: SubscriptionList :many
SELECT * FROM webhook_subscriptions
WHERE account_id = $1
ORDER BY created_at DESC, subscription_id DESC;

-- name: SubscriptionsForEvent :many
SELECT subscription_id FROM webhook_subscriptions
WHERE account_id = $1 AND event_type = $2 AND status <> 'Removed'
ORDER BY subscription_id;
