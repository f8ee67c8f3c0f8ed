-- name: ContactLockMany :many
-- Locks the contacts of a merge in id order, so that two merges sharing a contact queue
-- instead of deadlocking.
SELECT * FROM contact_rows
WHERE account_id = @account_id AND contact_id = ANY(@contact_ids::uuid[])
ORDER BY contact_id
FOR UPDATE;

-- name: MergeKeep :exec
-- Keeps each duplicate's id and consent record, and points the ids merged into a duplicate
-- earlier at the new primary; before the duplicates' rows go.
WITH moved AS (
    UPDATE contact_merges SET merged_into = @primary_id
    WHERE account_id = @account_id AND merged_into = ANY(@duplicate_ids::uuid[])
)
INSERT INTO contact_merges (account_id, contact_id, merged_into, merged_at, email_key, phone, consent_token,
    consent_created_at, consent_api_key_name, consent_api_key_prefix, consent_source_ip,
    consent_user_agent, consent_fields)
SELECT c.account_id, c.contact_id, @primary_id, @merged_at, c.email_key, c.phone, c.consent_token, c.created_at,
    c.consent_api_key_name, c.consent_api_key_prefix, c.consent_source_ip, c.consent_user_agent,
    c.consent_fields
FROM contacts c
WHERE c.account_id = @account_id AND c.contact_id = ANY(@duplicate_ids::uuid[]);

-- name: MergeMoveProperties :exec
-- Moves the duplicates' properties to the primary, but an active address the primary (or an
-- earlier duplicate) has already stays behind and goes with its contact.
UPDATE properties p SET contact_id = @primary_id
WHERE p.account_id = @account_id AND p.contact_id = ANY(@duplicate_ids::uuid[])
  AND (p.archived_at IS NOT NULL OR NOT EXISTS (
      SELECT 1 FROM properties q
      WHERE q.account_id = p.account_id AND q.normalized = p.normalized AND q.archived_at IS NULL
        AND (q.contact_id = @primary_id
             OR (q.contact_id = ANY(@duplicate_ids::uuid[]) AND q.property_id < p.property_id))));

-- name: MergeMoveActivities :exec
-- Moves the duplicates' activities to the primary, but an activity id the primary has (or an
-- earlier duplicate's) stays behind and goes with its contact.
UPDATE activities a SET contact_id = @primary_id
WHERE a.account_id = @account_id AND a.contact_id = ANY(@duplicate_ids::uuid[])
  AND NOT EXISTS (
      SELECT 1 FROM activities b
      WHERE b.account_id = a.account_id AND b.activity_id = a.activity_id
        AND (b.contact_id = @primary_id
             OR (b.contact_id = ANY(@duplicate_ids::uuid[]) AND b.contact_id < a.contact_id)));

-- name: MergeDeleteDuplicates :execrows
DELETE FROM contacts WHERE account_id = @account_id AND contact_id = ANY(@duplicate_ids::uuid[]);

-- name: ContactMergedInto :one
-- The contact a merged duplicate's id answers for.
SELECT merged_into FROM contact_merges WHERE account_id = @account_id AND contact_id = @contact_id;

-- name: ContactMergesOf :many
-- The duplicates merged into a contact, for an erasure of it.
SELECT contact_id, email_key, phone FROM contact_merges WHERE account_id = @account_id AND merged_into = @contact_id;
