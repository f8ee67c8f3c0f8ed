-- +goose Up
-- A membership row no longer references its segment: the reference's check locked the
-- segment's row (FOR KEY SHARE) for every row inserted, and every create or tag change
-- entering a segment took the same few rows' locks, which PostgreSQL keeps as ever-growing
-- multixacts. A segment's delete deletes its members itself (SegmentDelete), in the
-- transaction that bumps the account's segments version, after which no write adds one.
ALTER TABLE segment_members DROP CONSTRAINT segment_members_account_id_segment_id_fkey;

-- +goose Down
DELETE FROM segment_members m WHERE NOT EXISTS (
    SELECT 1 FROM segments s WHERE s.account_id = m.account_id AND s.segment_id = m.segment_id);
ALTER TABLE segment_members ADD FOREIGN KEY (account_id, segment_id) REFERENCES segments ON DELETE CASCADE;
