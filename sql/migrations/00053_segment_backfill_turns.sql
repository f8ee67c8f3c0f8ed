-- +goose Up
-- Backfills take turns between accounts: each claim is one page of a segment of the account
-- whose turn came longest ago (or never), so one account's many or large segments never hold
-- another account's first page for more than a page's time. A row per account that ever had
-- a backfill, written by the claim (never by a write of the account: nothing waits on it).
CREATE TABLE segment_backfill_turns (
    account_id uuid PRIMARY KEY REFERENCES accounts ON DELETE CASCADE,
    turn_at timestamptz NOT NULL
);

-- +goose Down
DROP TABLE segment_backfill_turns;
