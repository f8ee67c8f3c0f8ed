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
