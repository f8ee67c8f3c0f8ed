-- +goose Up
-- A contact's active properties, as the API shows them, kept on its row: a read is then one
-- row by primary key instead of a join with properties (a third of a read's PostgreSQL
-- time). properties stays the record (uniqueness, archived addresses, raw input); every
-- statement that changes a contact's active properties rewrites this copy in its
-- transaction, under the contact's row lock (ContactRefreshProperties), and a create writes
-- it with the contact.
ALTER TABLE contacts ADD COLUMN active_properties jsonb NOT NULL DEFAULT '[]';

-- The copy's one definition: the active properties of a contact, oldest first.
-- +goose StatementBegin
CREATE FUNCTION active_properties_of(account uuid, contact uuid) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT coalesce(jsonb_agg(jsonb_build_object(
               'propertyId', p.property_id,
               'aptOrUnitNumber', p.apt_or_unit_number,
               'streetAddress', p.street_address,
               'city', p.city,
               'county', p.county,
               'state', p.state,
               'zip', p.zip) ORDER BY p.property_id), '[]'::jsonb)
    FROM properties p
    WHERE p.account_id = account AND p.contact_id = contact AND p.archived_at IS NULL
$$;
-- +goose StatementEnd

UPDATE contacts c SET active_properties = active_properties_of(c.account_id, c.contact_id)
WHERE EXISTS (SELECT 1 FROM properties p
              WHERE p.account_id = c.account_id AND p.contact_id = c.contact_id AND p.archived_at IS NULL);

-- +goose Down
ALTER TABLE contacts DROP COLUMN active_properties;
DROP FUNCTION active_properties_of(uuid, uuid);
