-- name: ConsentGetByToken :one
-- Not scoped by account: the unguessable token is the credential of the public page.
SELECT * FROM consents WHERE token = $1;
