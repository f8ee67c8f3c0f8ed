-- name: TagsLock :one
-- Locks the contact so concurrent tag changes apply one after the other.
SELECT tags, email, assigned_user_email_id FROM contacts
WHERE account_id = $1 AND contact_id = $2
FOR UPDATE;

-- name: TagsSet :exec
UPDATE contacts SET tags = $3, updated_at = $4
WHERE account_id = $1 AND contact_id = $2;
