-- +goose Up
-- The list's walk down the creation order reads, for each contact it passes, only what the
-- filters compare: with the tags' keys, the email key and the name's words in the index, a
-- walk for tags or a q prefix is an index-only scan, not a heap read per contact passed.
-- (Contacts created and changed long ago are all-visible: the common case of a walk.)
DROP INDEX contacts_by_created;
CREATE INDEX contacts_by_created ON contacts (account_id, created_at DESC, contact_id DESC)
    INCLUDE (tag_keys, email_key, name_keys);

-- +goose Down
DROP INDEX contacts_by_created;
CREATE INDEX contacts_by_created ON contacts (account_id, created_at DESC, contact_id DESC);
