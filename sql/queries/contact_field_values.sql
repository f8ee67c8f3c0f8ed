-- The unique custom field values a contact holds (contact_unique_values): a contact's write
-- claims, moves and lets go of them in its own transaction.

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
