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

-- name: UniqueValuesClaim :many
-- Claims the contact's values of unique fields; returns the keys claimed, so a key missing
-- from them is held by another contact (a racing claim waits for the holder's transaction).
INSERT INTO contact_unique_values (account_id, field_key, value, contact_id)
SELECT @account_id::uuid, v.field_key, v.value, @contact_id::uuid
FROM (SELECT unnest(@field_keys::text[]) AS field_key, unnest(@vals::text[]) AS value) v
ON CONFLICT (account_id, field_key, value) DO NOTHING
RETURNING field_key;

-- name: UniqueValuesRelease :exec
-- The contact's claims of these fields, before it claims their new values or clears them.
DELETE FROM contact_unique_values
WHERE account_id = @account_id AND contact_id = @contact_id AND field_key = ANY(@field_keys::text[]);

-- name: UniqueValueHolder :one
-- The contact that holds a unique field's value (its unique form).
SELECT contact_id FROM contact_unique_values
WHERE account_id = @account_id AND field_key = @field_key AND value = @value;

-- name: UniqueValuesMove :exec
-- A merge's primary takes each field's value from the duplicate named with it
-- (@from_ids[i] for @field_keys[i]), and the claim of it, before the duplicates are deleted.
UPDATE contact_unique_values v SET contact_id = @primary_id::uuid
FROM (SELECT unnest(@from_ids::uuid[]) AS contact_id, unnest(@field_keys::text[]) AS field_key) m
WHERE v.account_id = @account_id::uuid AND v.contact_id = m.contact_id AND v.field_key = m.field_key;

-- name: UniqueValueHolders :many
-- The contacts that hold these values (unique forms) of a unique field: a batch's matches.
SELECT value, contact_id FROM contact_unique_values
WHERE account_id = @account_id AND field_key = @field_key AND value = ANY(@vals::text[]);
