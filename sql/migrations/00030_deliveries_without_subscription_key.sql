-- +goose Up
-- Every delivery written checked its subscription through a foreign key: SELECT ... FOR KEY
-- SHARE on the subscription's row. All the changes queueing deliveries to one subscription
-- at once share that lock, which PostgreSQL keeps as a multixact, written to the WAL with a
-- lock record on the row (as the account's row was in 00006). A subscription's row is never
-- deleted alone (DELETE /webhooks marks it Removed): it goes with its account (the accounts
-- trigger and ON DELETE CASCADE) or with a sandbox's reset, and both delete the account's
-- events, whose foreign key takes the deliveries with them. The claims join the
-- subscriptions, so a delivery without one would never be sent either.
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_account_id_subscription_id_fkey;

-- +goose Down
DELETE FROM webhook_deliveries d WHERE NOT EXISTS (
    SELECT 1 FROM webhook_subscriptions s WHERE s.account_id = d.account_id AND s.subscription_id = d.subscription_id);
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_account_id_subscription_id_fkey
    FOREIGN KEY (account_id, subscription_id) REFERENCES webhook_subscriptions (account_id, subscription_id) ON DELETE CASCADE;
