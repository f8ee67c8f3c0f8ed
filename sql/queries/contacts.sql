-- name: ContactInsert :one
-- ON CONFLICT DO NOTHING lets racing creates of one email resolve to exactly one winner
-- without aborting the losers' transactions: a loser gets no row.
INSERT INTO contacts (
    account_id, contact_id, email, email_key, name, phone, tags, assigned_user_email_id,
    crm_name, crm_url, crm_source, crm_stage, crm_created_date, consent_token,
    created_at, updated_at
) VALUES (
    @account_id, @contact_id, @email, @email_key, sqlc.narg('name'), sqlc.narg('phone'), @tags,
    sqlc.narg('assigned_user_email_id'), sqlc.narg('crm_name'), sqlc.narg('crm_url'),
    sqlc.narg('crm_source'), sqlc.narg('crm_stage'), sqlc.narg('crm_created_date'),
    @consent_token, @created_at, @created_at
)
ON CONFLICT (account_id, email_key) DO NOTHING
RETURNING contact_id;

-- name: ContactIDByEmail :one
SELECT contact_id FROM contacts WHERE account_id = $1 AND email_key = $2;

-- name: ContactGetByID :one
-- One round trip: the contact with its active properties as a JSON array.
SELECT sqlc.embed(c),
    (SELECT coalesce(jsonb_agg(jsonb_build_object(
                'propertyId', p.property_id,
                'aptOrUnitNumber', p.apt_or_unit_number,
                'streetAddress', p.street_address,
                'city', p.city,
                'county', p.county,
                'state', p.state,
                'zip', p.zip) ORDER BY p.property_id), '[]'::jsonb)
     FROM properties p
     WHERE p.account_id = c.account_id AND p.contact_id = c.contact_id
       AND p.archived_at IS NULL)::jsonb AS properties
FROM contacts c
WHERE c.account_id = $1 AND c.contact_id = $2;

-- name: ContactGetByEmail :one
SELECT sqlc.embed(c),
    (SELECT coalesce(jsonb_agg(jsonb_build_object(
                'propertyId', p.property_id,
                'aptOrUnitNumber', p.apt_or_unit_number,
                'streetAddress', p.street_address,
                'city', p.city,
                'county', p.county,
                'state', p.state,
                'zip', p.zip) ORDER BY p.property_id), '[]'::jsonb)
     FROM properties p
     WHERE p.account_id = c.account_id AND p.contact_id = c.contact_id
       AND p.archived_at IS NULL)::jsonb AS properties
FROM contacts c
WHERE c.account_id = $1 AND c.email_key = $2;
