-- +goose Up
-- One queue mechanism: deliveries and enrichment are queued on their own rows (00002, 00004),
-- and the periodic maintenance River ran (the sweep of Failing subscriptions) is a row here,
-- due at due_at, claimed by one process per run like every other queue item. River's schema
-- goes (docs/decisions/0001-row-queues.md).
CREATE TABLE periodic_tasks (
    name   text PRIMARY KEY,
    -- when the task is next due; a claim moves it one interval on, so the task runs once per
    -- interval across every process, and a run cut off by a crash runs again at the next one.
    due_at timestamptz NOT NULL,
    -- the last run: when it started and finished, and what went wrong (NULL: nothing).
    last_started_at  timestamptz,
    last_finished_at timestamptz,
    last_error       text
);

DROP TABLE IF EXISTS river_client_queue, river_client, river_queue, river_leader, river_notification,
    river_job, river_migration CASCADE;
DROP TYPE IF EXISTS river_job_state CASCADE; -- and river_job_state_in_bitmask with it
DROP FUNCTION IF EXISTS river_job_notify();

-- +goose Down
-- An older contactd creates River's schema itself when it starts (its migrator is idempotent).
DROP TABLE periodic_tasks;
