-- name: ConsentGetByToken :one
-- Not scoped by account: the unguessable token is the credential of the public page.
SELECT contact_id, created_at, consent_api_key_name, consent_api_key_prefix, consent_source_ip,
    consent_user_agent, consent_fields
FROM contacts WHERE consent_token = $1;
