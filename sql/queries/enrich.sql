-- name: EnrichMarkDue :exec
-- The contact (and so its new property) is due for enrichment.
UPDATE contacts SET enrich_due_at = @now::timestamptz, enrich_attempts = 0
WHERE account_id = @account_id AND contact_id = @contact_id;

-- name: EnrichClaim :many
-- Leases up to @max due contacts to the caller until @lease_until, with what enriching them
-- needs; SKIP LOCKED lets workers in several processes claim side by side. A lease that ends
-- without EnrichFinish or EnrichRetry (the worker died) makes the contact due again.
UPDATE contacts c
SET enrich_due_at = @lease_until::timestamptz, enrich_attempts = c.enrich_attempts + 1
FROM (
    SELECT d.account_id, d.contact_id FROM contacts d
    WHERE d.enrich_due_at <= @now::timestamptz
    ORDER BY d.enrich_due_at
    LIMIT @max
    FOR UPDATE SKIP LOCKED
) due
WHERE c.account_id = due.account_id AND c.contact_id = due.contact_id
RETURNING c.account_id, c.contact_id, c.email, c.email_status, c.assigned_user_email_id,
    c.enrich_attempts,
    (SELECT coalesce(jsonb_agg(jsonb_build_object(
                'propertyId', p.property_id,
                'rawAddress', p.raw_address,
                'aptOrUnitNumber', p.apt_or_unit_number,
                'streetAddress', p.street_address,
                'city', p.city,
                'county', p.county,
                'state', p.state,
                'zip', p.zip) ORDER BY p.property_id), '[]'::jsonb)
     FROM properties p
     WHERE p.account_id = c.account_id AND p.contact_id = c.contact_id
       AND p.archived_at IS NULL)::jsonb AS properties;

-- name: EnrichFinish :execrows
-- Ends a lease, applying the email verdict (empty: none). No row when the lease is no longer
-- the caller's: the email changed (making the contact due again) or the lease ran out.
UPDATE contacts SET
    email_status = CASE WHEN @verdict::text <> '' AND email_status = 'Pending' THEN @verdict::text ELSE email_status END,
    updated_at = CASE WHEN @verdict::text <> '' AND email_status = 'Pending' THEN @now ELSE updated_at END,
    enrich_due_at = NULL, enrich_attempts = 0
WHERE account_id = @account_id AND contact_id = @contact_id AND enrich_due_at = @lease_until::timestamptz;

-- name: EnrichRetry :exec
-- Ends a lease after a temporary failure: due again at @due_at, or never (NULL, giving up).
UPDATE contacts SET enrich_due_at = sqlc.narg('due_at')
WHERE account_id = @account_id AND contact_id = @contact_id AND enrich_due_at = @lease_until::timestamptz;

-- name: EnrichFinishMany :exec
-- EnrichFinish for a batch claimed under one lease, in one statement.
UPDATE contacts c SET
    email_status = CASE WHEN f.verdict <> '' AND c.email_status = 'Pending' THEN f.verdict ELSE c.email_status END,
    updated_at = CASE WHEN f.verdict <> '' AND c.email_status = 'Pending' THEN @now::timestamptz ELSE c.updated_at END,
    enrich_due_at = NULL, enrich_attempts = 0
FROM (SELECT unnest(@account_ids::uuid[]) AS account_id, unnest(@contact_ids::uuid[]) AS contact_id,
             unnest(@verdicts::text[]) AS verdict) f
WHERE c.account_id = f.account_id AND c.contact_id = f.contact_id
  AND c.enrich_due_at = @lease_until::timestamptz;
