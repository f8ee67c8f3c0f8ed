-- +goose Up
-- Payload filters (docs/webhooks.md): a subscription may keep, as given, a filter over its
-- events' payloads (filter) and, compiled by webhook.ParseFilter, the SQL/JSON path predicate
-- that decides it (filter_path); an event it filters out gets no delivery, and is counted in
-- filtered_events (flushed from each process's tally, webhook.FilterTally). Columns only
-- added, all nullable or defaulted: the previous release keeps working on this schema.
ALTER TABLE webhook_subscriptions
    ADD COLUMN filter jsonb,
    ADD COLUMN filter_path jsonpath,
    ADD COLUMN filtered_events bigint NOT NULL DEFAULT 0;

-- Whether a subscription with filter_path wants an event with this payload: the one
-- definition every statement that queues deliveries, and the filter-test endpoint, use. A
-- plain SQL expression, so PostgreSQL inlines it; silent, so a payload the path does not
-- fit never fails the write that emits it (it is filtered out).
CREATE FUNCTION webhook_filter_matches(filter_path jsonpath, payload json) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS 'SELECT filter_path IS NULL OR coalesce(jsonb_path_match(payload::jsonb, filter_path, ''{}'', true), false)';

-- +goose Down
DROP FUNCTION webhook_filter_matches(jsonpath, json);
ALTER TABLE webhook_subscriptions DROP COLUMN filter, DROP COLUMN filter_path, DROP COLUMN filtered_events;
