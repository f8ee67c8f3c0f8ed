-- +goose Up
-- The original service's tenth event type: an AI assistant handing a contact's conversation
-- to a person, reported as an AIHandoff activity and counted like the others.
ALTER TABLE contacts
    ADD COLUMN num_ai_handoffs integer NOT NULL DEFAULT 0,
    ADD COLUMN last_ai_handoff_at timestamptz;
CREATE OR REPLACE VIEW contact_rows AS
SELECT account_id, contact_id, email, email_key, name, phone, email_status, record_status, tags,
    lead_score, assigned_user_email_id, crm_name, crm_url, crm_source, crm_stage,
    crm_created_date, consent_token, num_form_submissions, last_form_submission_at,
    num_email_sends, last_email_send_at, num_email_opens, last_email_open_at, num_email_clicks,
    last_email_click_at, num_dashboard_views, last_dashboard_view_at, num_dashboard_clicks,
    last_dashboard_click_at, num_postcard_scans, last_postcard_scan_at, created_at, updated_at,
    enrich_due_at, enrich_attempts, active_properties, num_ai_handoffs, last_ai_handoff_at
FROM contacts;

-- Secrets contactd must read back are sealed (AES-256-GCM under the operator's key, package
-- seal): a dump of the tables shows none in clear. The sealing happens in contactd, not here
-- (SQL has no key): at start-up, every secret still in clear in `secret` is sealed into
-- `secret_sealed` and cleared, so `secret` is only ever read from rows a contactd of an
-- earlier version wrote during a rolling upgrade.
ALTER TABLE webhook_subscriptions
    ALTER COLUMN secret DROP NOT NULL,
    ADD COLUMN secret_sealed text,
    -- after a rotation, the secret before it, which still signs deliveries until
    -- previous_secret_until (24 hours).
    ADD COLUMN previous_secret_sealed text,
    ADD COLUMN previous_secret_until timestamptz,
    ADD CONSTRAINT webhook_subscriptions_has_secret CHECK (secret IS NOT NULL OR secret_sealed IS NOT NULL);
-- The account's client secret signs the original service's body-only fello-webhook-signature
-- header; created on first use.
ALTER TABLE accounts ADD COLUMN client_secret_sealed text;

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM webhook_subscriptions WHERE secret IS NULL) THEN
        RAISE EXCEPTION 'webhook secrets are sealed and SQL cannot open them: an older contactd cannot sign with them';
    END IF;
END
$$;
-- +goose StatementEnd
ALTER TABLE accounts DROP COLUMN client_secret_sealed;
ALTER TABLE webhook_subscriptions
    DROP CONSTRAINT webhook_subscriptions_has_secret,
    DROP COLUMN previous_secret_until,
    DROP COLUMN previous_secret_sealed,
    DROP COLUMN secret_sealed,
    ALTER COLUMN secret SET NOT NULL;
DROP VIEW contact_rows;
CREATE VIEW contact_rows AS
SELECT account_id, contact_id, email, email_key, name, phone, email_status, record_status, tags,
    lead_score, assigned_user_email_id, crm_name, crm_url, crm_source, crm_stage,
    crm_created_date, consent_token, num_form_submissions, last_form_submission_at,
    num_email_sends, last_email_send_at, num_email_opens, last_email_open_at, num_email_clicks,
    last_email_click_at, num_dashboard_views, last_dashboard_view_at, num_dashboard_clicks,
    last_dashboard_click_at, num_postcard_scans, last_postcard_scan_at, created_at, updated_at,
    enrich_due_at, enrich_attempts, active_properties
FROM contacts;
ALTER TABLE contacts DROP COLUMN last_ai_handoff_at, DROP COLUMN num_ai_handoffs;
