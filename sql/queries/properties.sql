-- name: PropertyInsert :one
INSERT INTO properties (
    account_id, property_id, contact_id, raw_address, apt_or_unit_number, street_address,
    city, county, state, zip, normalized, created_at
) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
ON CONFLICT (account_id, contact_id, normalized) WHERE archived_at IS NULL DO NOTHING
RETURNING property_id;
