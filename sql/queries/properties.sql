-- name: PropertyInsert :one
INSERT INTO properties (
    account_id, property_id, contact_id, raw_address, apt_or_unit_number, street_address,
    city, county, state, zip, normalized, created_at
) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
ON CONFLICT (account_id, contact_id, normalized) WHERE archived_at IS NULL DO NOTHING
RETURNING property_id;

-- name: PropertyArchive :one
-- Archiving twice keeps the first archive time.
UPDATE properties SET archived_at = coalesce(archived_at, sqlc.arg(now)::timestamptz)
WHERE account_id = @account_id AND property_id = @property_id
RETURNING contact_id;

-- name: PropertyCount :one
-- A contact's properties, active and all (archived kept as history): both are bounded.
SELECT count(*) FILTER (WHERE archived_at IS NULL) AS active, count(*) AS total
FROM properties WHERE account_id = @account_id AND contact_id = @contact_id;
