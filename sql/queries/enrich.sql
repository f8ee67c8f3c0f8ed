-- name: EnrichLockDue :many
-- Locks up to @max due contacts for the caller's transaction, with what enriching them
-- needs; SKIP LOCKED lets workers in several processes take batches side by side. The
-- caller finishes in that transaction the contacts it can check at once, and leases the
-- others (EnrichLease) to check them outside it. The raw addresses of the active properties
-- come only with contacts whose addresses another parser version parsed (else '[]').
SELECT c.account_id, c.contact_id, c.email, c.email_status, c.assigned_user_email_id,
    c.enrich_attempts, c.enrich_due_at::timestamptz AS held_due_at,
    CASE WHEN c.addresses_parsed_by = sqlc.arg('parser_version')::integer THEN '[]'::jsonb ELSE
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
       AND p.archived_at IS NULL) END::jsonb AS properties
FROM contacts c
WHERE c.enrich_due_at <= @now::timestamptz
ORDER BY c.enrich_due_at
LIMIT @max
FOR UPDATE OF c SKIP LOCKED;

-- name: EnrichLease :exec
-- Leases locked contacts to the caller until @lease_until, one more attempt each. A lease
-- that ends without EnrichFinish or EnrichRetry (the worker died) makes the contact due again.
UPDATE contacts c SET enrich_due_at = @lease_until::timestamptz, enrich_attempts = c.enrich_attempts + 1
FROM (SELECT unnest(@account_ids::uuid[]) AS account_id, unnest(@contact_ids::uuid[]) AS contact_id) l
WHERE c.account_id = l.account_id AND c.contact_id = l.contact_id;

-- name: EnrichFinish :execrows
-- Ends the caller's hold on a contact (its lease, or the due time it locked), applying the
-- email verdict (empty: none). No row when the hold is no longer the caller's: the email
-- changed (making the contact due again) or the lease ran out.
UPDATE contacts SET
    email_status = CASE WHEN @verdict::text <> '' AND email_status = 'Pending' THEN @verdict::text ELSE email_status END,
    updated_at = CASE WHEN @verdict::text <> '' AND email_status = 'Pending' THEN @now ELSE updated_at END,
    enrich_due_at = NULL, enrich_attempts = 0, addresses_parsed_by = sqlc.arg('parser_version')::integer
WHERE account_id = @account_id AND contact_id = @contact_id AND enrich_due_at = @held_due_at::timestamptz;

-- name: EnrichRetry :exec
-- Ends a lease after a temporary failure: due again at @due_at, or never (NULL, giving up).
UPDATE contacts SET enrich_due_at = sqlc.narg('due_at')
WHERE account_id = @account_id AND contact_id = @contact_id AND enrich_due_at = @lease_until::timestamptz;

-- name: EnrichFinishMany :many
-- EnrichFinish for a batch, in one statement, recording the ContactEnriched event of each
-- contact whose hold was still the caller's and that has one (@event_ids: uuid.Nil for none;
-- a contact with an event was Pending when claimed, and a change of email since would have
-- ended the hold), for the contacts whose accounts' subscriptions are still at the version
-- the fan-out found none to deliver their events to (@subscriptions_versions), and whose
-- accounts had no dynamic segment at @segments_versions (read with a lock held to the commit,
-- as ContactCreate does; -1: no segments kept). Returns the contacts it left alone for either
-- reason: their events may have deliveries now, or their segments need keeping.
WITH f AS (
    SELECT unnest(@account_ids::uuid[]) AS account_id, unnest(@contact_ids::uuid[]) AS contact_id,
           unnest(@verdicts::text[]) AS verdict, unnest(@held_due_ats::timestamptz[]) AS held_due_at,
           unnest(@event_ids::uuid[]) AS event_id, unnest(@event_payloads::text[]) AS event_payload,
           unnest(@subscriptions_versions::bigint[]) AS subscriptions_version,
           unnest(@segments_versions::bigint[]) AS segments_version
), stale AS (
    SELECT f.contact_id FROM f
    WHERE f.event_id <> '00000000-0000-0000-0000-000000000000'::uuid
      AND (NOT EXISTS (SELECT 1 FROM accounts a WHERE a.account_id = f.account_id AND a.subscriptions_version = f.subscriptions_version)
           OR NOT EXISTS (SELECT 1 FROM accounts a WHERE a.account_id = f.account_id
                          AND (f.segments_version < 0 OR a.segments_version = f.segments_version) FOR SHARE))
), finished AS (
    UPDATE contacts c SET
        email_status = CASE WHEN f.verdict <> '' AND c.email_status = 'Pending' THEN f.verdict ELSE c.email_status END,
        updated_at = CASE WHEN f.verdict <> '' AND c.email_status = 'Pending' THEN @now::timestamptz ELSE c.updated_at END,
        enrich_due_at = NULL, enrich_attempts = 0, addresses_parsed_by = sqlc.arg('parser_version')::integer
    FROM f
    WHERE c.account_id = f.account_id AND c.contact_id = f.contact_id
      AND c.enrich_due_at = f.held_due_at AND f.contact_id NOT IN (SELECT contact_id FROM stale)
    RETURNING c.account_id, c.contact_id
), recorded AS MATERIALIZED (
    -- the finished contacts' events, an account at a time (migration 00055), with no delivery
    SELECT record_events(f.account_id, array_agg(f.event_id), array_agg('ContactEnriched'::text), array_agg(f.contact_id),
               array_agg(f.event_payload), array_agg(@now::timestamptz), array_agg(''::text), false,
               NULL, NULL, NULL, NULL, NULL, false) AS events
    FROM f JOIN finished d ON d.account_id = f.account_id AND d.contact_id = f.contact_id
    WHERE f.event_id <> '00000000-0000-0000-0000-000000000000'::uuid
    GROUP BY f.account_id
)
-- the condition reads recorded once, before the rows: a CTE that only selects runs when read
SELECT contact_id::uuid AS contact_id FROM stale
WHERE (SELECT count(events) FROM recorded) >= 0;

-- name: PropertyUpdateAddress :execrows
-- Leaves the row alone when the standardised form would collide with another active property.
UPDATE properties p SET
    apt_or_unit_number = @apt_or_unit_number, street_address = @street_address, city = @city,
    county = @county, state = @state, zip = @zip, normalized = @normalized
WHERE p.account_id = @account_id AND p.property_id = @property_id AND p.archived_at IS NULL
  AND NOT EXISTS (SELECT 1 FROM properties o
                  WHERE o.account_id = p.account_id AND o.contact_id = p.contact_id
                    AND o.property_id <> p.property_id AND o.archived_at IS NULL
                    AND o.normalized = @normalized);
