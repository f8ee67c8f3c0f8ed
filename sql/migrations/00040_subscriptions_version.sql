-- +goose Up
-- Who receives an event is decided in Go (webhook.Audience.Plan), from a snapshot of the
-- account's live subscriptions and their filters, and every statement that queues deliveries
-- queues that plan only if the snapshot is still the account's: each transaction that changes
-- the account's live subscriptions or their filters adds one to subscriptions_version
-- (webhook.Announce), and the statement checks it, writing nothing when it moved. So the
-- deliveries are those of the subscriptions the statement sees, as when it joined them.
-- A column with a constant default: no rewrite, and the previous release, which neither
-- reads nor bumps it, keeps working (its own changes still notify every process).
ALTER TABLE accounts ADD COLUMN subscriptions_version bigint NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE accounts DROP COLUMN subscriptions_version;
