-- name: AccountInsert :one
INSERT INTO accounts (account_id, name, created_at) VALUES ($1, $2, $3)
RETURNING *;

-- name: AccountGetByName :one
SELECT * FROM accounts WHERE name = $1;

-- name: AccountLock :exec
-- Serialises changes that enforce per-account limits (subscriptions per event type).
SELECT account_id FROM accounts WHERE account_id = $1 FOR UPDATE;
