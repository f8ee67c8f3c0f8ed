-- name: SubscriptionRotateSecret :one
-- Replaces the subscription's secret; the one it replaces signs too until @previous_until.
UPDATE webhook_subscriptions
SET previous_secret_sealed = coalesce(secret_sealed, @previous_sealed), previous_secret_until = @previous_until,
    secret_sealed = @secret_sealed, secret = NULL, updated_at = @now
WHERE account_id = @account_id AND subscription_id = @subscription_id
RETURNING subscription_id;

-- name: AccountClientSecret :one
SELECT client_secret_sealed FROM accounts WHERE account_id = $1;

-- name: AccountClientSecretSet :one
-- Sets the account's client secret: when it has none (@only_if_unset), or always (a
-- rotation). No row when it has one and @only_if_unset: the caller reads that one.
UPDATE accounts SET client_secret_sealed = @client_secret_sealed
WHERE account_id = @account_id AND (NOT @only_if_unset::bool OR client_secret_sealed IS NULL)
RETURNING client_secret_sealed;

-- name: SecretKeyIDs :many
-- The ids of the keys the stored secrets are sealed under (package seal's "v1.<id>.<...>").
SELECT DISTINCT split_part(v, '.', 2)::text AS key_id FROM (
    SELECT secret_sealed AS v FROM webhook_subscriptions WHERE secret_sealed IS NOT NULL
    UNION ALL SELECT previous_secret_sealed FROM webhook_subscriptions WHERE previous_secret_sealed IS NOT NULL
    UNION ALL SELECT client_secret_sealed FROM accounts WHERE client_secret_sealed IS NOT NULL
    UNION ALL SELECT key_sealed FROM suppression_key
) sealed;

-- name: SubscriptionSecretsToSeal :many
-- A page of subscriptions whose secrets are in clear or sealed under another key than
-- @current_key_id, after (@after_account, @after_subscription).
SELECT account_id, subscription_id, secret, secret_sealed, previous_secret_sealed
FROM webhook_subscriptions
WHERE (account_id, subscription_id) > (@after_account::uuid, @after_subscription::uuid)
  AND (secret IS NOT NULL
       OR split_part(secret_sealed, '.', 2) <> @current_key_id::text
       OR split_part(previous_secret_sealed, '.', 2) <> @current_key_id::text)
ORDER BY account_id, subscription_id
LIMIT @page_size;

-- name: SubscriptionSecretsReseal :execrows
-- Stores a subscription's secrets sealed anew, if they are still what the caller read: a
-- rotation in between wins.
UPDATE webhook_subscriptions
SET secret = NULL, secret_sealed = @secret_sealed, previous_secret_sealed = sqlc.narg('previous_secret_sealed')
WHERE account_id = @account_id AND subscription_id = @subscription_id
  AND secret IS NOT DISTINCT FROM sqlc.narg('old_secret')
  AND secret_sealed IS NOT DISTINCT FROM sqlc.narg('old_secret_sealed')
  AND previous_secret_sealed IS NOT DISTINCT FROM sqlc.narg('old_previous_secret_sealed');

-- name: AccountSecretsToSeal :many
-- A page of accounts whose client secret is sealed under another key than @current_key_id.
SELECT account_id, client_secret_sealed::text AS client_secret_sealed FROM accounts
WHERE account_id > @after_account::uuid AND client_secret_sealed IS NOT NULL
  AND split_part(client_secret_sealed, '.', 2) <> @current_key_id::text
ORDER BY account_id
LIMIT @page_size;

-- name: AccountSecretReseal :execrows
UPDATE accounts SET client_secret_sealed = @client_secret_sealed
WHERE account_id = @account_id AND client_secret_sealed = @old_client_secret_sealed;
