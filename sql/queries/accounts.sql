-- name: AccountInsert :one
INSERT INTO accounts (account_id, name, created_at) VALUES ($1, $2, $3)
RETURNING *;

-- name: AccountGetByName :one
SELECT * FROM accounts WHERE name = $1 AND live_account_id IS NULL;

-- name: SandboxGet :one
SELECT account_id FROM accounts WHERE live_account_id = $1;

-- name: SandboxInsert :one
-- The live account's sandbox, made on first use (racing makers: one wins, all get its id).
WITH made AS (
    INSERT INTO accounts (account_id, name, created_at, live_account_id)
    SELECT sqlc.arg('sandbox_id')::uuid, l.name, sqlc.arg('created_at')::timestamptz, l.account_id
    FROM accounts l WHERE l.account_id = sqlc.arg('live_account_id')::uuid AND l.live_account_id IS NULL
    ON CONFLICT (live_account_id) WHERE live_account_id IS NOT NULL DO NOTHING
    RETURNING account_id
)
SELECT account_id FROM made
UNION ALL
SELECT account_id FROM accounts WHERE live_account_id = sqlc.arg('live_account_id')::uuid;

-- name: AccountIsLive :one
SELECT (live_account_id IS NULL)::boolean AS live FROM accounts WHERE account_id = $1;

-- name: SandboxContactsLock :exec
-- Waits for the changes in flight to the sandbox's contacts (an enrichment finishing, a tag
-- change), before SandboxReset in the same transaction: the reset's snapshot, taken after,
-- sees the events they record, which a snapshot taken while they ran would leave behind.
SELECT 1 FROM contacts WHERE account_id = sqlc.arg('sandbox_id')::uuid FOR UPDATE;

-- name: SandboxReset :exec
-- Deletes a sandbox's data (contacts with their properties, activity and segment memberships,
-- subscriptions, events and deliveries, idempotency keys); its keys and segments stay.
WITH contacts_gone AS (DELETE FROM contacts WHERE account_id = sqlc.arg('sandbox_id')::uuid),
     members_gone AS (DELETE FROM segment_members WHERE account_id = sqlc.arg('sandbox_id')::uuid),
     subscriptions_gone AS (DELETE FROM webhook_subscriptions WHERE account_id = sqlc.arg('sandbox_id')::uuid),
     version AS (UPDATE accounts SET subscriptions_version = subscriptions_version + 1
                 WHERE account_id = sqlc.arg('sandbox_id')::uuid),
     events_gone AS (DELETE FROM webhook_events WHERE account_id = sqlc.arg('sandbox_id')::uuid),
     deliveries_gone AS (DELETE FROM webhook_deliveries WHERE account_id = sqlc.arg('sandbox_id')::uuid)
DELETE FROM idempotency_keys WHERE account_id = sqlc.arg('sandbox_id')::uuid;
