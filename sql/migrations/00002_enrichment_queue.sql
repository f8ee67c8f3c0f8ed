-- +goose Up
-- Enrichment is queued on the contact itself instead of as a job row per change: the change
-- marks the contact due in the statement it already runs (a create costs no extra write), and
-- the enrichment workers claim due contacts in batches. enrich_due_at is when the contact is
-- next due (NULL: nothing to do); while a worker holds it, the end of the worker's lease.
ALTER TABLE contacts
    ADD COLUMN enrich_due_at timestamptz,
    ADD COLUMN enrich_attempts integer NOT NULL DEFAULT 0;
CREATE INDEX contacts_enrich_due ON contacts (enrich_due_at) WHERE enrich_due_at IS NOT NULL;

-- Enrichment jobs queued before this version become due contacts.
-- +goose StatementBegin
DO $$
BEGIN
    IF to_regclass('river_job') IS NOT NULL THEN
        UPDATE contacts c SET enrich_due_at = now()
        FROM river_job j
        WHERE j.kind = 'contact_enrich' AND j.state NOT IN ('completed', 'cancelled', 'discarded')
          AND c.account_id = (j.args->>'account_id')::uuid
          AND c.contact_id = (j.args->>'contact_id')::uuid;
        DELETE FROM river_job WHERE kind = 'contact_enrich';
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP INDEX contacts_enrich_due;
ALTER TABLE contacts DROP COLUMN enrich_due_at, DROP COLUMN enrich_attempts;
