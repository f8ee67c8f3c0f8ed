-- +goose Up
-- Segments: saved filters of an account's contacts (docs/api.md, "Segments"). A segment's
-- kind never changes; its filter is stored as checked (operands read as the attributes they
-- compare are stored). Names are unique in an account, whatever their case.
CREATE TABLE segments (
    account_id uuid NOT NULL REFERENCES accounts ON DELETE CASCADE,
    segment_id uuid NOT NULL,
    name text NOT NULL,
    kind text NOT NULL CHECK (kind IN ('dynamic', 'snapshot')),
    filter jsonb NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (account_id, segment_id)
);
CREATE UNIQUE INDEX segments_name ON segments (account_id, lower(name));

-- +goose Down
DROP TABLE segments;
