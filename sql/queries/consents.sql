-- name: ConsentInsert :exec
INSERT INTO consents (
    account_id, contact_id, token, created_at, api_key_name, api_key_prefix, source_ip,
    user_agent, fields
) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9);

-- name: ConsentGetByToken :one
-- Not scoped by account: the unguessable token is the credential of the public page.
SELECT * FROM consents WHERE token = $1;
