-- +goose Up
-- Which version of the address parser (address.Version) parsed the contact's active
-- properties: enrichment re-parses a contact's raw addresses only when another version did
-- (after an upgrade), instead of on every enrichment, where it re-read every property and
-- re-parsed addresses the running parser had just parsed. 0, for the contacts already
-- stored: their addresses are re-parsed once, when they are next enriched.
ALTER TABLE contacts ADD COLUMN addresses_parsed_by integer NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE contacts DROP COLUMN addresses_parsed_by;
