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

-- name: PropertyCount :one
-- A contact's properties, active and all (archived kept as history): both are bounded.
SELECT count(*) FILTER (WHERE archived_at IS NULL) AS active, count(*) AS total
FROM properties WHERE account_id = @account_id AND contact_id = @contact_id;
