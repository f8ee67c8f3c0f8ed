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

-- name: SubscriptionsCountFiltered :exec
-- Adds a process's tally of filtered-out events to its subscriptions' counts, in id order
-- (so two processes' flushes never wait on each other both ways).
UPDATE webhook_subscriptions s SET filtered_events = s.filtered_events + t.n
FROM (SELECT unnest(@account_ids::uuid[]) AS account_id, unnest(@subscription_ids::uuid[]) AS subscription_id,
             unnest(@counts::bigint[]) AS n
      ORDER BY 1, 2) t
WHERE s.account_id = t.account_id AND s.subscription_id = t.subscription_id;

-- name: SubscriptionRemove :execrows
-- Removes the subscription for @reason (Deleted, Gone); removing it again keeps the first
-- removal's reason and time.
UPDATE webhook_subscriptions
SET status = 'Removed', updated_at = CASE WHEN status = 'Removed' THEN updated_at ELSE @now END,
    removed_reason = CASE WHEN status = 'Removed' THEN removed_reason ELSE @reason::text END
WHERE account_id = @account_id AND subscription_id = @subscription_id;

-- name: SubscriptionGet :one
SELECT * FROM webhook_subscriptions WHERE account_id = $1 AND subscription_id = $2;

-- name: SubscriptionRecordFailure :many
-- Records a failed attempt (@failure: "HTTP 503", or the error) on the subscription; the third
-- failure in a row turns an Active subscription Failing, and then returns its row (to warn
-- the account: SubscriptionFailing).
UPDATE webhook_subscriptions
SET consecutive_failures = consecutive_failures + 1, last_failure_at = @now, last_failure = @failure::text,
    status = CASE WHEN status = 'Active' AND consecutive_failures + 1 >= @failing_after::int THEN 'Failing' ELSE status END,
    failing_since = CASE WHEN status = 'Active' AND consecutive_failures + 1 >= @failing_after::int THEN @now ELSE failing_since END,
    updated_at = CASE WHEN status = 'Active' AND consecutive_failures + 1 >= @failing_after::int THEN @now ELSE updated_at END
WHERE account_id = @account_id AND subscription_id = @subscription_id AND status <> 'Removed'
RETURNING subscription_id, event_type, last_success_at, created_at, consecutive_failures,
    @failure::text AS failure, (status = 'Failing' AND failing_since IS NOT DISTINCT FROM @now)::boolean AS turned_failing;

-- name: SubscriptionsSweepFailing :one
-- Maintenance across accounts: Failing subscriptions without a success since the cutoff
-- are removed, and their accounts' subscriptions_version moves on; how many were removed.
WITH swept AS (
    UPDATE webhook_subscriptions
    SET status = 'Removed', updated_at = @now, removed_reason = 'FailingTooLong'
    WHERE status = 'Failing' AND coalesce(last_success_at, created_at) < @cutoff
    RETURNING account_id
), bumped AS (
    UPDATE accounts SET subscriptions_version = subscriptions_version + 1
    WHERE account_id IN (SELECT account_id FROM swept)
)
SELECT count(*) FROM swept;

-- name: SubscribersLoad :many
-- The account's live subscriptions with their filters, and the version of them
-- (accounts.subscriptions_version) in the same snapshot: webhook.Audience. One row with no
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
-- Tells every contactd process (webhook.Subscribers) that the account's live subscriptions
-- changed; '' means any account. Delivered at commit.
SELECT pg_notify('contactd_subscriptions_changed', sqlc.arg('account_id')::text);
