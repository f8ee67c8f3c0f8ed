-- +goose Up
-- Search by custom field values: equality, in and a multiEnum's option are answered by this
-- index (jsonb_path_ops keeps a hash of each value with its key, and @@ with == reads it);
-- ranges and exists are not, and are answered by walking the creation order. The account is
-- the first column, so one account's values never cost another's search. Contacts without
-- values are left out: a write without custom fields pays nothing for it.
CREATE INDEX contacts_custom_fields ON contacts USING gin (account_id, custom_fields jsonb_path_ops)
    WHERE custom_fields <> '{}'::jsonb;

-- +goose Down
DROP INDEX contacts_custom_fields;
