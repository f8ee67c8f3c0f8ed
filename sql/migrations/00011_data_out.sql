-- +goose Up
-- Data out: list, search and export contacts; a feed of every event.

-- The events feed: every event is recorded now, subscribed to or not, kept for the
-- retention (30 days by default) and read in the order of the transactions that wrote them.
-- xid is the writing transaction's id: a reader returns only events of transactions below
-- its snapshot's xmin (all of them finished), so one that commits late can never land behind
-- a cursor a poller already holds (see the query EventsFeed).
ALTER TABLE webhook_events ADD COLUMN xid xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX webhook_events_feed ON webhook_events (account_id, xid, event_id);
CREATE INDEX webhook_events_feed_type ON webhook_events (account_id, event_type, xid, event_id);
-- pruning by age: events are appended in time order, so a BRIN index is enough and costs an
-- insert almost nothing.
CREATE INDEX webhook_events_occurred ON webhook_events USING brin (occurred_at);

-- Listing and searching contacts, each filter or order an index.
CREATE EXTENSION IF NOT EXISTS btree_gin;
-- +goose StatementBegin
-- lower_tags is a contact's tags, lower-cased: the tag filter is case-insensitive. Lowering
-- the array's text form lowers each element (quotes and escapes have no case) in one call,
-- about half the cost of unnest and array_agg, and simple enough for the planner to inline.
CREATE FUNCTION lower_tags(tags text[]) RETURNS text[]
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN lower(tags::text)::text[];
-- +goose StatementEnd
-- +goose StatementBegin
-- name_words is a contact's name as lower-cased words, for the q search's word prefixes.
CREATE FUNCTION name_words(name text) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN to_tsvector('simple'::regconfig, coalesce(name, ''));
-- +goose StatementEnd
-- tag_keys is the tags lower-cased, stored: a list walking thousands of rows to fill a page
-- tests each row's tags, and comparing stored keys costs a twentieth of lowering the tags on
-- every row.
-- name_keys is the same for the name's words: the q search's walk matches stored words
-- instead of parsing every name it passes. (One ALTER: one rewrite of the table.)
ALTER TABLE contacts
    ADD COLUMN tag_keys text[] GENERATED ALWAYS AS (lower_tags(tags)) STORED,
    ADD COLUMN name_keys tsvector GENERATED ALWAYS AS (name_words(name)) STORED;
CREATE INDEX contacts_by_created ON contacts (account_id, created_at DESC, contact_id DESC);
CREATE INDEX contacts_by_updated ON contacts (account_id, updated_at DESC, contact_id DESC);
CREATE INDEX contacts_tags ON contacts USING gin (account_id, lower_tags(tags));
-- The email's unique index serves the q search's prefixes too: with text_pattern_ops, which
-- compares bytes whatever the collation, LIKE 'jan%' is a range of it (equality, and so
-- ON CONFLICT on the email, are the same as before): one index fewer for every write.
CREATE UNIQUE INDEX contacts_email_key ON contacts (account_id, email_key text_pattern_ops);
ALTER TABLE contacts DROP CONSTRAINT contacts_account_id_email_key_key;
CREATE INDEX contacts_name_words ON contacts USING gin (account_id, name_words(name));

-- +goose Down
ALTER TABLE contacts ADD CONSTRAINT contacts_account_id_email_key_key UNIQUE (account_id, email_key);
DROP INDEX contacts_name_words, contacts_email_key, contacts_tags, contacts_by_updated, contacts_by_created;
ALTER TABLE contacts DROP COLUMN name_keys, DROP COLUMN tag_keys;
DROP FUNCTION name_words(text);
DROP FUNCTION lower_tags(text[]);
DROP INDEX webhook_events_occurred, webhook_events_feed_type, webhook_events_feed;
ALTER TABLE webhook_events DROP COLUMN xid;
