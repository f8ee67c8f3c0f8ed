-- +goose Up
-- A page of a subscription's attempts (GET /webhooks/{id}/deliveries), newest first, read
-- every delivery the subscription had kept to find their attempts, and sorted them: its cost
-- grew with the subscription's history (24,000 buffers at 10,000 deliveries). An attempt now
-- carries its delivery's subscription, and an index in the page's order makes a page the
-- index entries it returns. The previous release inserts attempts without it, while a
-- rolling upgrade runs both: those are left out of the pages (they are still recorded).
ALTER TABLE webhook_attempts ADD COLUMN subscription_id uuid;
UPDATE webhook_attempts a SET subscription_id = d.subscription_id
FROM webhook_deliveries d WHERE d.account_id = a.account_id AND d.delivery_id = a.delivery_id;
CREATE INDEX webhook_attempts_subscription
    ON webhook_attempts (account_id, subscription_id, attempted_at DESC, delivery_id DESC, attempt DESC);

-- +goose Down
DROP INDEX webhook_attempts_subscription;
ALTER TABLE webhook_attempts DROP COLUMN subscription_id;
