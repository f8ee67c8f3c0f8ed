-- +goose Up
-- A filter that cannot be evaluated on an event (more JSON values than a filter reads) fails
-- closed: the event is not delivered, and the subscription counts it here, beside the events
-- its filter left out, so that its owner sees why.
ALTER TABLE webhook_subscriptions ADD COLUMN unevaluated_events bigint NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE webhook_subscriptions DROP COLUMN unevaluated_events;
