-- name: KeyInsert :one
INSERT INTO api_keys (account_id, key_id, name, prefix, key_hash, created_at, scopes, expires_at, allowed_networks)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
RETURNING *;

-- name: KeyAuthenticate :one
SELECT k.account_id, k.key_id, k.name, k.prefix, k.scopes, k.expires_at, k.allowed_networks,
       (a.live_account_id IS NULL)::boolean AS live
FROM api_keys k JOIN accounts a ON a.account_id = k.account_id
WHERE k.key_hash = $1 AND k.revoked_at IS NULL;

-- name: KeyListByAccount :many
-- The keys of the live account with this name and of its sandbox.
SELECT k.*, (a.live_account_id IS NULL)::boolean AS live FROM api_keys k
JOIN accounts a USING (account_id)
WHERE a.account_id IN (SELECT l.account_id FROM accounts l WHERE l.name = $1 AND l.live_account_id IS NULL
                       UNION ALL
                       SELECT s.account_id FROM accounts s JOIN accounts l ON l.account_id = s.live_account_id
                       WHERE l.name = $1 AND l.live_account_id IS NULL)
ORDER BY k.created_at, k.key_id;

-- name: KeyExpireByPrefix :many
-- Sets when a key stops working (a grace period before its revocation).
UPDATE api_keys SET expires_at = $2
WHERE prefix = $1 AND revoked_at IS NULL
RETURNING *;

-- name: KeyRevokeByPrefix :many
UPDATE api_keys SET revoked_at = $2
WHERE prefix = $1 AND revoked_at IS NULL
RETURNING *;

-- name: KeyTouch :exec
-- Records use at most once a minute per key, also across processes: the hot path rarely writes.
UPDATE api_keys SET last_used_at = sqlc.arg('used_at')::timestamptz
WHERE account_id = sqlc.arg('account_id') AND key_id = sqlc.arg('key_id')
  AND (last_used_at IS NULL OR last_used_at < sqlc.arg('used_at')::timestamptz - interval '1 minute');

-- name: KeyRevokedNotify :exec
-- Tells every contactd process listening (auth's key cache) to forget the key; delivered at commit.
SELECT pg_notify('contactd_key_revoked', sqlc.arg('key_id')::uuid::text);
