-- +goose Up
-- The list's order indexes ascend, and lists read them backward (newest first). Kept
-- descending, every new contact and every change went in at the low end of its account's
-- range, where a B-tree splits a full page in halves that the later inserts never fill (they
-- all go further left): the creation index of 1,000,000 contacts created one after another
-- took 331 MB, against 192 MB ascending, where the split at the high end leaves full pages
-- behind. Half the pages to write, cache and walk; the walk of a page of two tags measured
-- 7 % faster.
DROP INDEX contacts_by_created;
CREATE INDEX contacts_by_created ON contacts (account_id, created_at, contact_id)
    INCLUDE (tag_keys, email_key, name_keys);
DROP INDEX contacts_by_updated;
CREATE INDEX contacts_by_updated ON contacts (account_id, updated_at, contact_id);

-- +goose Down
DROP INDEX contacts_by_updated;
CREATE INDEX contacts_by_updated ON contacts (account_id, updated_at DESC, contact_id DESC);
DROP INDEX contacts_by_created;
CREATE INDEX contacts_by_created ON contacts (account_id, created_at DESC, contact_id DESC)
    INCLUDE (tag_keys, email_key, name_keys);
