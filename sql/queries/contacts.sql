-- name: ContactCreate :batchone
-- A new contact with its consent record and, when its address parsed, its first property, in
-- one statement (one round trip), with its events (TagsAdded when it has tags, ContactEnriched
-- when its email status was decided without DNS) and the deliveries the fan-out planned for
-- them (event.Audience.Plan: @delivery_event_ids with @delivery_subscription_ids), due at
-- once. Only while the account's subscriptions are still at the plan's
-- @subscriptions_version, and its custom fields were validated against the definitions at
-- @fields_version: otherwise nothing is written and current is false (plan again, or, when
-- fields_current is false too, validate against the definitions now). Only, too, while the
-- account's segments are at @segments_version (segment.Service.Entered; -1: the caller's
-- transaction keeps them), read with a lock held to the commit, so that a change of a segment
-- waits for the create: segments_current false otherwise; the contact is then a member of
-- @segment_ids, whose ContactEnteredSegment events are among its events. It
-- is due for enrichment (@enrich_due_at) only while its email status is Pending: an address
-- is parsed by the running parser already. ON CONFLICT DO NOTHING lets racing creates of one
-- email resolve to exactly one winner without aborting the losers' transactions: a loser's
-- contact_id is uuid.Nil and it writes nothing. A contact whose email or phone the account
-- suppresses (@suppression_digests: an erased person's) is not inserted either. (Foreign
-- keys are checked at the end of the statement, after the contact row exists.)
WITH current AS (
    SELECT 1 FROM accounts a WHERE a.account_id = @account_id::uuid AND a.subscriptions_version = @subscriptions_version::bigint
        AND a.fields_version = @fields_version::bigint
), segments_current AS (
    SELECT 1 FROM accounts a WHERE a.account_id = @account_id::uuid
        AND (@segments_version::bigint < 0 OR a.segments_version = @segments_version::bigint)
    FOR SHARE
), c AS (
    INSERT INTO contacts (
        account_id, contact_id, email, email_key, name, phone, tags, assigned_user_email_id,
        crm_name, crm_url, crm_source, crm_stage, crm_created_date, consent_token,
        consent_api_key_name, consent_api_key_prefix, consent_source_ip, consent_user_agent,
        consent_fields, created_at, updated_at, enrich_due_at, active_properties, addresses_parsed_by,
        email_status, custom_fields
    )
    SELECT @account_id::uuid, @contact_id::uuid, @email::text, @email_key::text, sqlc.narg('name')::text,
        sqlc.narg('phone')::text, @tags::text[], sqlc.narg('assigned_user_email_id')::text,
        sqlc.narg('crm_name')::text, sqlc.narg('crm_url')::text, sqlc.narg('crm_source')::text,
        sqlc.narg('crm_stage')::text, sqlc.narg('crm_created_date')::timestamptz,
        @consent_token::text, @consent_api_key_name::text, @consent_api_key_prefix::text, @consent_source_ip::text,
        @consent_user_agent::text, @consent_fields::jsonb, @created_at::timestamptz, @created_at,
        sqlc.narg('enrich_due_at')::timestamptz, @active_properties::jsonb, @addresses_parsed_by::integer,
        @email_status::text, @custom_fields::jsonb
    WHERE NOT EXISTS (
        SELECT 1 FROM suppressions s
        WHERE s.account_id = @account_id AND s.digest = ANY(@suppression_digests::bytea[]))
      AND EXISTS (SELECT 1 FROM current) AND EXISTS (SELECT 1 FROM segments_current)
    ON CONFLICT (account_id, email_key) DO NOTHING
    RETURNING account_id, contact_id, created_at
), property AS (
    INSERT INTO properties (
        account_id, property_id, contact_id, raw_address, apt_or_unit_number, street_address,
        city, county, state, zip, normalized, created_at
    )
    SELECT account_id, sqlc.narg('property_id')::uuid, contact_id, sqlc.arg('raw_address')::text,
           sqlc.arg('apt_or_unit_number')::text, sqlc.arg('street_address')::text,
           sqlc.arg('city')::text, sqlc.arg('county')::text, sqlc.arg('state')::text,
           sqlc.arg('zip')::text, sqlc.arg('normalized')::text, created_at
    FROM c
    WHERE sqlc.narg('property_id')::uuid IS NOT NULL
), recorded AS MATERIALIZED (
    -- the contact's events and their planned deliveries, if it was inserted (migration 00055)
    SELECT record_events(c.account_id, @event_ids::uuid[], @event_types::text[],
               array_fill(c.contact_id, ARRAY[coalesce(cardinality(@event_ids::uuid[]), 0)]), @event_payloads::text[],
               array_fill(c.created_at, ARRAY[coalesce(cardinality(@event_ids::uuid[]), 0)]), @event_traces::text[], false,
               NULL, @delivery_event_ids::uuid[], @delivery_subscription_ids::uuid[], NULL, NULL, false) AS events
    FROM c
), member AS (
    INSERT INTO segment_members (account_id, segment_id, contact_id, added_at)
    SELECT c.account_id, s.segment_id, c.contact_id, c.created_at
    FROM c, unnest(@segment_ids::uuid[]) AS s(segment_id)
)
SELECT coalesce((SELECT contact_id FROM c), '00000000-0000-0000-0000-000000000000'::uuid)::uuid AS contact_id,
       EXISTS (SELECT 1 FROM current) AS current,
       EXISTS (SELECT 1 FROM accounts a WHERE a.account_id = @account_id::uuid AND a.fields_version = @fields_version::bigint) AS fields_current,
       EXISTS (SELECT 1 FROM segments_current) AS segments_current,
       coalesce((SELECT events FROM recorded), 0)::integer AS events_recorded;

-- name: ContactIDByEmail :one
SELECT contact_id FROM contacts WHERE account_id = $1 AND email_key = $2;

-- name: ContactGetByID :batchone
-- One row by primary key: the active properties are kept on it (active_properties).
SELECT * FROM contact_rows WHERE account_id = $1 AND contact_id = $2;

-- name: ContactGetByEmail :batchone
SELECT * FROM contact_rows WHERE account_id = $1 AND email_key = $2;

-- name: ContactRefreshProperties :one
-- Rewrites the contact's copy of its active properties from properties, after a change to
-- them in the same transaction. The caller must hold the contact's row lock from an earlier
-- statement (ContactLock, or an UPDATE of the contact): this statement's snapshot then sees
-- every other transaction's change to the contact's properties, each of which took that
-- lock too, while a lock this statement waited for itself would leave it the older snapshot.
UPDATE contacts c SET active_properties = active_properties_of(c.account_id, c.contact_id)
WHERE c.account_id = $1 AND c.contact_id = $2
RETURNING active_properties;

-- name: ContactLock :one
-- Locks the contact for a read-modify-write (PATCH, activity, a new property).
SELECT * FROM contact_rows
WHERE account_id = $1 AND contact_id = $2
FOR UPDATE;

-- name: ContactLockBatch :exec
-- Locks the account's contacts with these email keys, or holding these values of the unique
-- field @field_key (a batch matching on it), in id order, the order a merge and a segment's
-- backfill take contacts in: a batch upsert takes its contacts so first, and its later locks
-- by email or value then wait for nothing (in email order they could deadlock with a merge).
SELECT 1 FROM contacts c
WHERE c.account_id = @account_id AND (c.email_key = ANY(@email_keys::text[]) OR c.contact_id IN (
    SELECT u.contact_id FROM contact_unique_values u
    WHERE u.account_id = @account_id AND u.field_key = @field_key AND u.value = ANY(@vals::text[])))
ORDER BY c.contact_id
FOR UPDATE OF c;

-- name: ContactLockByEmail :one
-- Locks the account's contact with this email key for a batch upsert's read-modify-write.
SELECT * FROM contact_rows
WHERE account_id = $1 AND email_key = $2
FOR UPDATE;

-- name: ContactOtherWithEmail :one
-- Another contact of the account that has this email key, for PATCH's duplicate check.
SELECT contact_id FROM contacts
WHERE account_id = @account_id AND email_key = @email_key AND contact_id <> @contact_id;

-- name: ContactUpdateDetails :exec
-- A new email makes the contact due for enrichment (the right-hand sides see the old row).
UPDATE contacts SET
    enrich_due_at = CASE WHEN email_key <> @email_key THEN @updated_at ELSE enrich_due_at END,
    enrich_attempts = CASE WHEN email_key <> @email_key THEN 0 ELSE enrich_attempts END,
    email = @email, email_key = @email_key, email_status = @email_status,
    name = sqlc.narg('name'), phone = sqlc.narg('phone'), record_status = @record_status,
    assigned_user_email_id = sqlc.narg('assigned_user_email_id'),
    crm_name = sqlc.narg('crm_name'), crm_url = sqlc.narg('crm_url'),
    crm_source = sqlc.narg('crm_source'), crm_stage = sqlc.narg('crm_stage'),
    crm_created_date = sqlc.narg('crm_created_date'), custom_fields = @custom_fields, updated_at = @updated_at
WHERE account_id = @account_id AND contact_id = @contact_id;

-- name: ContactEngagementSet :exec
UPDATE contacts SET
    num_form_submissions = @num_form_submissions, last_form_submission_at = sqlc.narg('last_form_submission_at'),
    num_email_sends = @num_email_sends, last_email_send_at = sqlc.narg('last_email_send_at'),
    num_email_opens = @num_email_opens, last_email_open_at = sqlc.narg('last_email_open_at'),
    num_email_clicks = @num_email_clicks, last_email_click_at = sqlc.narg('last_email_click_at'),
    num_dashboard_views = @num_dashboard_views, last_dashboard_view_at = sqlc.narg('last_dashboard_view_at'),
    num_dashboard_clicks = @num_dashboard_clicks, last_dashboard_click_at = sqlc.narg('last_dashboard_click_at'),
    num_postcard_scans = @num_postcard_scans, last_postcard_scan_at = sqlc.narg('last_postcard_scan_at'),
    num_ai_handoffs = @num_ai_handoffs, last_ai_handoff_at = sqlc.narg('last_ai_handoff_at'),
    lead_score = @lead_score, record_status = @record_status, updated_at = @updated_at
WHERE account_id = @account_id AND contact_id = @contact_id;

-- name: ContactDelete :execrows
-- Properties and activities go with it (ON DELETE CASCADE), the consent record is on its row.
DELETE FROM contacts WHERE account_id = $1 AND contact_id = $2;

-- name: ContactCreateMany :many
-- A batch's new contacts in one statement (POST /contacts/batch, contactd import), each with
-- its consent record (the batch's origin), its first property, its events and their planned
-- deliveries (of the contacts inserted), due for enrichment while its email status is
-- Pending, as ContactCreate does for one, and as it only while the account's subscriptions
-- are at @subscriptions_version and the definitions at @fields_version (as ContactCreate
-- does). Each column
-- comes as an array with an element per contact, as River's JobInsertFastMany sends its jobs: a contact's tags are its slice of tags (tag_from,
-- tag_count: PostgreSQL has no arrays of arrays), nullable text comes as varchar[] ([]*string:
-- sqlc.yaml says why), and properties and events have arrays of their own, for the contacts
-- that have one. Contacts are inserted in email order, so concurrent batches take the email
-- keys in one order; ON CONFLICT DO NOTHING skips emails the account has (waiting first for a
-- transaction that has just inserted one), and contacts one of whose suppression digests
-- (their slice of @suppression_digests: digest_from, digest_count) the account suppresses
-- are skipped too. Returns a row
-- per contact given, in their order: whether it was inserted, and whether the plan was current
-- (if not, none was).
WITH current AS (
    SELECT 1 FROM accounts a WHERE a.account_id = @account_id::uuid AND a.subscriptions_version = @subscriptions_version::bigint
        AND a.fields_version = @fields_version::bigint
), input AS (
    SELECT unnest(@contact_ids::uuid[]) AS contact_id,
           unnest(@digest_from::integer[]) AS digest_from,
           unnest(@digest_count::integer[]) AS digest_count,
           unnest(@emails::text[]) AS email,
           unnest(@email_keys::text[]) AS email_key,
           unnest(@names::varchar[]) AS name,
           unnest(@phones::varchar[]) AS phone,
           unnest(@tag_from::integer[]) AS tag_from,
           unnest(@tag_count::integer[]) AS tag_count,
           unnest(@assigned_user_email_ids::varchar[]) AS assigned_user_email_id,
           unnest(@crm_names::varchar[]) AS crm_name,
           unnest(@crm_urls::varchar[]) AS crm_url,
           unnest(@crm_sources::varchar[]) AS crm_source,
           unnest(@crm_stages::varchar[]) AS crm_stage,
           unnest(@crm_created_dates::varchar[]) AS crm_created_date,
           unnest(@consent_tokens::text[]) AS consent_token,
           unnest(@consent_fields::jsonb[]) AS consent_fields,
           unnest(@active_properties::jsonb[]) AS active_properties,
           unnest(@email_statuses::text[]) AS email_status,
           unnest(@custom_fields::jsonb[]) AS custom_fields,
           generate_subscripts(@contact_ids::uuid[], 1) AS position
), c AS (
    INSERT INTO contacts (
        account_id, contact_id, email, email_key, name, phone, tags, assigned_user_email_id,
        crm_name, crm_url, crm_source, crm_stage, crm_created_date, consent_token,
        consent_api_key_name, consent_api_key_prefix, consent_source_ip, consent_user_agent,
        consent_fields, created_at, updated_at, enrich_due_at, active_properties, addresses_parsed_by,
        email_status, custom_fields
    )
    SELECT @account_id::uuid, i.contact_id, i.email, i.email_key, i.name, i.phone,
           (@tags::text[])[i.tag_from + 1 : i.tag_from + i.tag_count],
           i.assigned_user_email_id, i.crm_name, i.crm_url, i.crm_source, i.crm_stage,
           i.crm_created_date::timestamptz, i.consent_token, @consent_api_key_name::text,
           @consent_api_key_prefix::text, @consent_source_ip::text, @consent_user_agent::text,
           i.consent_fields, @created_at::timestamptz, @created_at::timestamptz,
           CASE WHEN i.email_status = 'Pending' THEN @created_at::timestamptz END,
           i.active_properties, @addresses_parsed_by::integer, i.email_status, i.custom_fields
    FROM input i
    WHERE NOT EXISTS (
        SELECT 1 FROM suppressions s
        WHERE s.account_id = @account_id::uuid
          AND s.digest = ANY((@suppression_digests::bytea[])[i.digest_from + 1 : i.digest_from + i.digest_count]))
      AND EXISTS (SELECT 1 FROM current)
    ORDER BY i.email_key
    ON CONFLICT (account_id, email_key) DO NOTHING
    RETURNING contacts.contact_id
), property AS (
    INSERT INTO properties (
        account_id, property_id, contact_id, raw_address, apt_or_unit_number, street_address,
        city, county, state, zip, normalized, created_at
    )
    SELECT @account_id::uuid, p.property_id, p.contact_id, p.raw_address, p.apt_or_unit_number,
           p.street_address, p.city, p.county, p.state, p.zip, p.normalized, @created_at::timestamptz
    FROM (
        SELECT unnest(@property_ids::uuid[]) AS property_id,
               unnest(@property_contact_ids::uuid[]) AS contact_id,
               unnest(@raw_addresses::text[]) AS raw_address,
               unnest(@apt_or_unit_numbers::text[]) AS apt_or_unit_number,
               unnest(@street_addresses::text[]) AS street_address,
               unnest(@cities::text[]) AS city,
               unnest(@counties::text[]) AS county,
               unnest(@states::text[]) AS state,
               unnest(@zips::text[]) AS zip,
               unnest(@normalized::text[]) AS normalized
    ) p JOIN c ON c.contact_id = p.contact_id
), recorded AS MATERIALIZED (
    -- the inserted contacts' events and their planned deliveries (migration 00055)
    SELECT record_events(@account_id::uuid, array_agg(e.event_id), array_agg(e.event_type), array_agg(e.contact_id),
               array_agg(e.payload), array_agg(@created_at::timestamptz), array_agg(e.trace), false,
               NULL, @delivery_event_ids::uuid[], @delivery_subscription_ids::uuid[], NULL, NULL, false) AS events
    FROM (SELECT unnest(@event_ids::uuid[]) AS event_id, unnest(@event_types::text[]) AS event_type,
                 unnest(@event_contact_ids::uuid[]) AS contact_id, unnest(@event_payloads::text[]) AS payload,
                 unnest(@event_traces::text[]) AS trace) e
    JOIN c ON c.contact_id = e.contact_id
)
SELECT i.contact_id::uuid AS contact_id, (i.contact_id IN (SELECT contact_id FROM c))::boolean AS inserted,
       EXISTS (SELECT 1 FROM current) AS current,
       EXISTS (SELECT 1 FROM accounts a WHERE a.account_id = @account_id::uuid AND a.fields_version = @fields_version::bigint) AS fields_current,
       (SELECT events FROM recorded)::integer AS events_recorded
FROM input i ORDER BY i.position;

-- name: EnrichMarkDue :exec
-- The contact (and so its new property) is due for enrichment.
UPDATE contacts SET enrich_due_at = @now::timestamptz, enrich_attempts = 0
WHERE account_id = @account_id AND contact_id = @contact_id;

-- name: SegmentBackfillContacts :many
-- A backfill page: the account's contacts after @after, locked against writes until the
-- page's membership is set. A contact a write holds is skipped, never waited for: writes lock
-- contacts in their own order (a batch by email), and a page that waited for one while holding
-- others could deadlock with it. The page ends before the first contact skipped
-- (SegmentBackfillIDs says which), and the next page waits for it by trying again.
SELECT * FROM contact_rows
WHERE account_id = @account_id AND contact_id > @after
ORDER BY contact_id LIMIT @max_rows
FOR SHARE SKIP LOCKED;

-- name: SegmentBackfillIDs :many
-- The ids of a backfill page, locked or not: where SegmentBackfillContacts skipped one.
SELECT contact_id FROM contacts
WHERE account_id = @account_id AND contact_id > @after
ORDER BY contact_id LIMIT @max_rows;
