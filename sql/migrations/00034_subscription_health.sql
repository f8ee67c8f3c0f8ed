-- +goose Up
-- Receiver health (docs/webhooks.md, "Receiver health"): why a subscription was removed
-- (DELETE, a 410 Gone, or failing for 5 days), and the last failure, for the API and the
-- console. Written by the statements that already write the row on a failure or a removal.
-- Columns only added, nullable: the previous release keeps working on this schema (its
-- removals leave removed_reason NULL, which the API shows as no reason).
ALTER TABLE webhook_subscriptions
    ADD COLUMN removed_reason text CHECK (removed_reason IN ('Deleted', 'Gone', 'FailingTooLong')),
    ADD COLUMN last_failure_at timestamptz,
    ADD COLUMN last_failure text;

-- +goose Down
ALTER TABLE webhook_subscriptions DROP COLUMN removed_reason, DROP COLUMN last_failure_at, DROP COLUMN last_failure;
