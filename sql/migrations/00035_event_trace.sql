-- +goose Up
-- Tracing (internal/tracing): the W3C traceparent of the span of the request that made an
-- event, which its delivery attempts continue, in any process. NULL when tracing is off or
-- the request was not sampled. A column only added, nullable, no default (no rewrite of any
-- partition): the previous release keeps working on this schema.
ALTER TABLE webhook_events ADD COLUMN trace text;

-- +goose Down
ALTER TABLE webhook_events DROP COLUMN trace;
