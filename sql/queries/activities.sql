-- name: ActivityInsert :execrows
-- No row when the contact already has this activity id: the retry of a reported activity.
INSERT INTO activities (account_id, contact_id, activity_id, type, occurred_at, details, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (account_id, contact_id, activity_id) DO NOTHING;
