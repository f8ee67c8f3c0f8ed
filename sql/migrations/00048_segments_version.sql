-- +goose Up
-- Bumped in the transaction of every change of a segment: a process's cache of an account's
-- dynamic segments is current while the account is at the version it read them at.
ALTER TABLE accounts ADD COLUMN segments_version bigint NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE accounts DROP COLUMN segments_version;
