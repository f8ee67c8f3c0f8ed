-- +goose Up
-- The first queue of 00004 claimed the oldest due deliveries of every account through this
-- index. Since 00012 every claim goes by subscription (webhook_deliveries_pending), and only
-- the queue depth in /metrics still read it, which the pending index answers as well. Yet
-- every delivery wrote it twice (queued, then leased: each a new entry): two of the eleven
-- index entries a delivery's three row versions wrote.
DROP INDEX webhook_deliveries_due;

-- +goose Down
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'Pending';
