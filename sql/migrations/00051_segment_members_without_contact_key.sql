-- +goose Up
-- A membership row no longer references its contact either: the reference's check ran for
-- every row a write inserted (a create entering ten segments checked its own new row ten
-- times). Every statement that deletes contacts takes their memberships first: a contact's
-- delete, an erasure and a merge's duplicates leave their segments (segment.Leave, with
-- their events), and a sandbox's reset deletes its members with its contacts.
ALTER TABLE segment_members DROP CONSTRAINT segment_members_account_id_contact_id_fkey;

-- +goose Down
DELETE FROM segment_members m WHERE NOT EXISTS (
    SELECT 1 FROM contacts c WHERE c.account_id = m.account_id AND c.contact_id = m.contact_id);
ALTER TABLE segment_members ADD FOREIGN KEY (account_id, contact_id) REFERENCES contacts ON DELETE CASCADE;
