-- +goose Up
-- A test event (POST /webhooks/{id}/test) is delivered like any other, so it needs an event
-- row; test marks it, and the events feed, a replay and GET /events/{id} leave it out.
ALTER TABLE webhook_events ADD COLUMN test boolean NOT NULL DEFAULT false;

-- +goose Down
DELETE FROM webhook_events WHERE test;
ALTER TABLE webhook_events DROP COLUMN test;
