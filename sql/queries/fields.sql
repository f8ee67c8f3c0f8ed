-- name: FieldsLock :exec
-- One definition of the account's fields changes at a time, so that the limit is counted by
-- one writer.
SELECT pg_advisory_xact_lock(hashtextextended('contactd.fields/' || (sqlc.arg('account_id')::uuid)::text, 0));

-- name: FieldsCount :one
SELECT count(*) FROM contact_fields WHERE account_id = $1;

-- name: FieldInsert :many
-- Nothing when the account has the key already.
INSERT INTO contact_fields (account_id, key, label, description, type, required, is_unique, options, validation, created_at, updated_at)
VALUES (@account_id, @key, @label, @description, @type, @required, @is_unique, @options, @validation, @now, @now)
ON CONFLICT (account_id, key) DO NOTHING
RETURNING *;

-- name: FieldList :many
SELECT * FROM contact_fields
WHERE account_id = @account_id AND (@with_archived::bool OR archived_at IS NULL)
ORDER BY created_at, key;

-- name: FieldGet :one
SELECT * FROM contact_fields WHERE account_id = $1 AND key = $2;

-- name: FieldGetForUpdate :one
SELECT * FROM contact_fields WHERE account_id = $1 AND key = $2 FOR UPDATE;

-- name: FieldUpdate :one
UPDATE contact_fields
SET label = @label, description = @description, required = @required, options = @options, validation = @validation, updated_at = @now
WHERE account_id = @account_id AND key = @key
RETURNING *;

-- name: FieldArchive :one
-- Archiving an archived field changes nothing.
UPDATE contact_fields
SET archived_at = coalesce(archived_at, @now::timestamptz), updated_at = CASE WHEN archived_at IS NULL THEN @now::timestamptz ELSE updated_at END
WHERE account_id = @account_id AND key = @key
RETURNING *;

-- name: FieldsVersionBump :exec
-- In the transaction of every change of a definition: writes validated against the
-- definitions before it are refused (ContactCreate's current) and validated again.
UPDATE accounts SET fields_version = fields_version + 1 WHERE account_id = $1;

-- name: FieldDefinitions :one
-- The account's definitions, archived ones too, at the version they are: one statement, so
-- that the two agree.
SELECT a.fields_version AS version,
       coalesce((SELECT jsonb_agg(to_jsonb(f) ORDER BY f.created_at, f.key) FROM contact_fields f
                 WHERE f.account_id = a.account_id), '[]')::jsonb AS fields
FROM accounts a WHERE a.account_id = $1;
