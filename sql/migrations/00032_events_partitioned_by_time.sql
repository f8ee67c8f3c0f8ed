-- +goose Up
-- Events partitioned by time. An event's id is a version 7 UUID of the millisecond it
-- occurred at (webhook.NewEventID), so a range of ids is a range of time: one partition per
-- UTC day of ids, created ahead of time by the store (store.EnsureEventPartitions), and the
-- retention drops a whole day's partition once all of it is past the retention, instead of
-- deleting its rows one by one (and their index entries, and vacuuming them after).
-- Partitioning by the id and not by occurred_at keeps the primary key (account_id,
-- event_id) as it was: a lookup by id (a delivery's claim, the feed's GET of one event)
-- reads the one partition the id falls in, where a key on occurred_at would have to probe
-- every partition.
--
-- The table as it was becomes the DEFAULT partition, attached as it is (no copy, no scan:
-- it is the only partition): the days it holds are deleted row by row by the retention as
-- before, until none are left; ids outside every day partition (not made by contactd, or of
-- a day no partition was made for) land there too and are pruned the same way.
--
-- Deliveries pointed at their event through a foreign key, ON DELETE CASCADE: each delivery
-- written locked its event's row (FOR KEY SHARE: a lock record in the WAL), each event pruned
-- looked its deliveries up without an index on their event, and a partition referenced by a
-- key can only be dropped after a scan of every delivery, under a lock that stops every
-- write of events. The key goes; deliveries are pruned by their own age (BRIN below) and a
-- pending delivery whose event is gone is failed by the retention (DeliveriesOrphanedFail):
-- the claims join the events, so it would never be sent anyway.
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_account_id_event_id_fkey;
CREATE INDEX webhook_deliveries_created ON webhook_deliveries USING brin (created_at);

ALTER TABLE webhook_events RENAME TO webhook_events_default;
ALTER INDEX webhook_events_pkey RENAME TO webhook_events_default_pkey;
ALTER INDEX webhook_events_feed RENAME TO webhook_events_default_feed;
ALTER INDEX webhook_events_feed_type RENAME TO webhook_events_default_feed_type;
ALTER INDEX webhook_events_contact RENAME TO webhook_events_default_contact;
ALTER INDEX webhook_events_occurred RENAME TO webhook_events_default_occurred;

CREATE TABLE webhook_events (
    account_id  uuid NOT NULL,
    event_id    uuid NOT NULL,
    event_type  text NOT NULL,
    contact_id  uuid,
    -- json, not jsonb: the exact text that is signed and sent.
    payload     json NOT NULL,
    occurred_at timestamptz NOT NULL,
    xid         xid8 NOT NULL DEFAULT pg_current_xact_id(),
    test        boolean NOT NULL DEFAULT false,
    PRIMARY KEY (account_id, event_id)
) PARTITION BY RANGE (event_id);
CREATE INDEX webhook_events_feed ON webhook_events (account_id, xid, event_id);
CREATE INDEX webhook_events_feed_type ON webhook_events (account_id, event_type, xid, event_id);
CREATE INDEX webhook_events_contact ON webhook_events (account_id, contact_id, event_id);
-- the default partition's rows are pruned by age (a day partition's BRIN costs an insert
-- almost nothing)
CREATE INDEX webhook_events_occurred ON webhook_events USING brin (occurred_at);
ALTER TABLE webhook_events ATTACH PARTITION webhook_events_default DEFAULT;

-- The previous release's retention task, events_prune, deleted by ctid from webhook_events:
-- on the partitioned table a ctid names a row in every partition, so an older process still
-- running during a rolling upgrade would delete recent events of other partitions. Its row
-- is parked for ever (a process registers its tasks with ON CONFLICT DO NOTHING, so an older
-- one started later leaves it parked); this release's task is events_retention.
UPDATE periodic_tasks SET due_at = 'infinity' WHERE name = 'events_prune';

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION accounts_delete_data() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM webhook_deliveries WHERE account_id = OLD.account_id;
    DELETE FROM webhook_events WHERE account_id = OLD.account_id;
    DELETE FROM contacts WHERE account_id = OLD.account_id;
    DELETE FROM idempotency_keys WHERE account_id = OLD.account_id;
    RETURN OLD;
END
$$;
-- +goose StatementEnd

-- +goose Down
DELETE FROM periodic_tasks WHERE name = 'events_retention';
UPDATE periodic_tasks SET due_at = now() WHERE name = 'events_prune';
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION accounts_delete_data() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM webhook_events WHERE account_id = OLD.account_id;
    DELETE FROM contacts WHERE account_id = OLD.account_id;
    DELETE FROM idempotency_keys WHERE account_id = OLD.account_id;
    RETURN OLD;
END
$$;
-- +goose StatementEnd
-- every partition's rows back into one table
CREATE TABLE webhook_events_unpartitioned (LIKE webhook_events INCLUDING DEFAULTS);
INSERT INTO webhook_events_unpartitioned SELECT * FROM webhook_events;
DROP TABLE webhook_events;
ALTER TABLE webhook_events_unpartitioned RENAME TO webhook_events;
ALTER TABLE webhook_events ADD PRIMARY KEY (account_id, event_id);
CREATE INDEX webhook_events_feed ON webhook_events (account_id, xid, event_id);
CREATE INDEX webhook_events_feed_type ON webhook_events (account_id, event_type, xid, event_id);
CREATE INDEX webhook_events_contact ON webhook_events (account_id, contact_id, event_id);
CREATE INDEX webhook_events_occurred ON webhook_events USING brin (occurred_at);
DROP INDEX webhook_deliveries_created;
DELETE FROM webhook_deliveries d WHERE NOT EXISTS (
    SELECT 1 FROM webhook_events e WHERE e.account_id = d.account_id AND e.event_id = d.event_id);
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_account_id_event_id_fkey
    FOREIGN KEY (account_id, event_id) REFERENCES webhook_events ON DELETE CASCADE;
