-- +goose Up
-- Segment membership (docs/api.md, "Segments"): a dynamic segment's members are kept in the
-- transaction of each write that changes them; a new or edited segment is filled by a
-- background pass (status 'backfilling') that keyset-walks the account's contacts from
-- backfill_after, and belongs to one generation of the filter: an edit starts a new one. The
-- segments saved before this release have no members yet, and are backfilled.
ALTER TABLE segments
    ADD COLUMN status text NOT NULL DEFAULT 'backfilling' CHECK (status IN ('backfilling', 'ready')),
    ADD COLUMN generation bigint NOT NULL DEFAULT 0,
    ADD COLUMN backfill_after uuid,
    ADD COLUMN backfill_evaluated bigint NOT NULL DEFAULT 0,
    ADD COLUMN backfill_lease timestamptz;
CREATE INDEX segments_backfilling ON segments (updated_at) WHERE status = 'backfilling';

CREATE TABLE segment_members (
    account_id uuid NOT NULL,
    segment_id uuid NOT NULL,
    contact_id uuid NOT NULL,
    added_at timestamptz NOT NULL,
    PRIMARY KEY (account_id, segment_id, contact_id),
    FOREIGN KEY (account_id, segment_id) REFERENCES segments ON DELETE CASCADE,
    FOREIGN KEY (account_id, contact_id) REFERENCES contacts ON DELETE CASCADE
);
-- a write reads the segments its contacts are in; a contact's delete finds its rows
CREATE INDEX segment_members_contact ON segment_members (account_id, contact_id);

-- +goose Down
DROP TABLE segment_members;
DROP INDEX segments_backfilling;
ALTER TABLE segments DROP COLUMN status, DROP COLUMN generation, DROP COLUMN backfill_after,
    DROP COLUMN backfill_evaluated, DROP COLUMN backfill_lease;
