-- +goose Up
-- A contact's active properties, as the API shows them, kept on its row: a read is then one
-- row by primary key instead of a join with properties (a third of a read's PostgreSQL
-- time). properties stays the record (uniqueness, archived addresses, raw input); every
-- statement that changes a contact's active properties rewrites this copy in its
-- transaction, under the contact's row lock (ContactRefreshProperties), and a create writes
-- it with the contact.
ALTER TABLE contacts ADD COLUMN active_properties jsonb NOT NULL DEFAULT '[]';

UPDATE contacts c SET active_properties = a.props
FROM (
    SELECT p.account_id, p.contact_id,
           jsonb_agg(jsonb_build_object(
               'propertyId', p.property_id,
               'aptOrUnitNumber', p.apt_or_unit_number,
               'streetAddress', p.street_address,
               'city', p.city,
               'county', p.county,
               'state', p.state,
               'zip', p.zip) ORDER BY p.property_id) AS props
    FROM properties p
    WHERE p.archived_at IS NULL
    GROUP BY p.account_id, p.contact_id
) a
WHERE c.account_id = a.account_id AND c.contact_id = a.contact_id;

-- +goose Down
ALTER TABLE contacts DROP COLUMN active_properties;
