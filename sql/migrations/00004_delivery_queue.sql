-- +goose Up
-- Deliveries are queued on their own row instead of as a River job per attempt: a Pending
-- delivery is due at next_attempt_at, and the delivery workers claim due ones in batches,
-- with the event and the subscription an attempt needs, in one statement. While a worker
-- holds a delivery, next_attempt_at is the end of its lease: if the worker dies, the same
-- attempt is made again then. The change that emits an event writes no job row, and the
-- fetch is a plan of ours (River's degrades to a scan of its whole table when statistics
-- were taken while it was empty).
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'Pending';

-- Pending deliveries already hold their next attempt's time; their River jobs go.
-- +goose StatementBegin
DO $$
BEGIN
    IF to_regclass('river_job') IS NOT NULL THEN
        DELETE FROM river_job WHERE kind = 'webhook_delivery';
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- An older contactd needs a River job for each Pending delivery's next attempt.
-- +goose StatementBegin
DO $$
BEGIN
    IF to_regclass('river_job') IS NOT NULL THEN
        INSERT INTO river_job (args, kind, queue, max_attempts, priority, scheduled_at, state)
        SELECT jsonb_build_object('account_id', account_id, 'delivery_id', delivery_id, 'attempt', attempts + 1),
               'webhook_delivery', 'webhooks', 10, 1, coalesce(next_attempt_at, now()),
               CASE WHEN coalesce(next_attempt_at, now()) <= now() THEN 'available' ELSE 'scheduled' END::river_job_state
        FROM webhook_deliveries WHERE status = 'Pending';
    END IF;
END
$$;
-- +goose StatementEnd
DROP INDEX webhook_deliveries_due;
