-- +goose Up
-- A paused subscription keeps collecting deliveries but sends none until it is resumed: it is
-- held back for good (next_send_at at the end of 9999: every claim already honours it, a
-- receiver's Retry-After cannot shorten it, and drivers read it as a time); paused_at says since when.
ALTER TABLE webhook_subscriptions ADD COLUMN paused_at timestamptz;

-- +goose Down
UPDATE webhook_subscriptions SET next_send_at = NULL WHERE paused_at IS NOT NULL;
ALTER TABLE webhook_subscriptions DROP COLUMN paused_at;
