-- name: ConsentGetByToken :one
-- Not scoped by account: the unguessable token is the credential of the public page. A
-- duplicate merged into another contact keeps its record in contact_merges.
SELECT contact_id, created_at, consent_api_key_name, consent_api_key_prefix, consent_source_ip,
    consent_user_agent, consent_fields
FROM contacts WHERE consent_token = @token::text
UNION ALL
SELECT contact_id, consent_created_at, consent_api_key_name, consent_api_key_prefix,
    consent_source_ip, consent_user_agent, consent_fields
FROM contact_merges WHERE consent_token = @token::text
LIMIT 1;
