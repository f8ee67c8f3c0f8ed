-- name: TagsLock :one
-- Locks the contact so concurrent tag changes apply one after the other.
SELECT tags, email, assigned_user_email_id FROM contacts
WHERE account_id = $1 AND contact_id = $2
FOR UPDATE;

-- name: TagsSet :exec
UPDATE contacts SET tags = $3, updated_at = $4
WHERE account_id = $1 AND contact_id = $2;

-- name: TagsGet :one
SELECT tags FROM contacts WHERE account_id = $1 AND contact_id = $2;

-- name: TagsSwap :batchone
-- Compare-and-swap: sets the tags only if they are still the ones the change was computed
-- from (no row otherwise), so a change without events needs no transaction and no lock.
UPDATE contacts SET tags = @tags, updated_at = @updated_at
WHERE account_id = @account_id AND contact_id = @contact_id AND tags = @previous::text[]
RETURNING contact_id;
