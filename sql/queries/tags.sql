-- name: TagsLock :one
-- Locks the contact so concurrent tag changes apply one after the other.
SELECT tags, email, assigned_user_email_id FROM contacts
WHERE account_id = $1 AND contact_id = $2
FOR UPDATE;

-- name: TagsSet :exec
UPDATE contacts SET tags = $3, updated_at = $4
WHERE account_id = $1 AND contact_id = $2;

-- name: TagsGet :one
SELECT tags, email, assigned_user_email_id FROM contacts WHERE account_id = $1 AND contact_id = $2;

-- name: TagsSwap :batchone
-- Compare-and-swap: sets the tags only if they are still the ones the change was computed
-- from (no row otherwise), and records the change's events (TagsAdded, TagsRemoved) with it,
-- so a change nobody subscribes to needs no transaction and no lock.
WITH swapped AS (
    UPDATE contacts c SET tags = @tags, updated_at = @updated_at
    WHERE c.account_id = @account_id AND c.contact_id = @contact_id AND c.tags = @previous::text[]
    RETURNING c.account_id, c.contact_id
), events AS (
    INSERT INTO webhook_events (account_id, event_id, event_type, contact_id, payload, occurred_at)
    SELECT s.account_id, unnest(@event_ids::uuid[]), unnest(@event_types::text[]), s.contact_id,
           unnest(@event_payloads::text[])::json, @updated_at
    FROM swapped s
)
SELECT contact_id FROM swapped;
