-- +goose Up
-- A contact's custom field values (docs/api.md, "Custom fields"), normalised, keyed by field.
-- A constant default: the column is added without rewriting the table.
ALTER TABLE contacts ADD COLUMN custom_fields jsonb NOT NULL DEFAULT '{}';

-- Bumped by every change of the account's field definitions: a write validated against
-- definitions of an older version is not made (ContactCreate's current), and its process
-- reads the definitions again.
ALTER TABLE accounts ADD COLUMN fields_version bigint NOT NULL DEFAULT 0;

-- The values of the account's unique fields, one row per value (in its unique form: an email
-- as its provider reads it, a phone in E.164, a number in its shortest form), so that two
-- contacts cannot hold one: the primary key decides a race. Written in the transaction of the
-- contact's change, gone with the contact.
CREATE TABLE contact_unique_values (
    account_id uuid NOT NULL,
    field_key text NOT NULL,
    value text NOT NULL,
    contact_id uuid NOT NULL,
    PRIMARY KEY (account_id, field_key, value),
    FOREIGN KEY (account_id, contact_id) REFERENCES contacts (account_id, contact_id) ON DELETE CASCADE
);
CREATE INDEX contact_unique_values_contact ON contact_unique_values (account_id, contact_id);

CREATE OR REPLACE VIEW contact_rows AS
SELECT account_id, contact_id, email, email_key, name, phone, email_status, record_status, tags,
    lead_score, assigned_user_email_id, crm_name, crm_url, crm_source, crm_stage,
    crm_created_date, consent_token, num_form_submissions, last_form_submission_at,
    num_email_sends, last_email_send_at, num_email_opens, last_email_open_at, num_email_clicks,
    last_email_click_at, num_dashboard_views, last_dashboard_view_at, num_dashboard_clicks,
    last_dashboard_click_at, num_postcard_scans, last_postcard_scan_at, created_at, updated_at,
    enrich_due_at, enrich_attempts, active_properties, num_ai_handoffs, last_ai_handoff_at,
    custom_fields
FROM contacts;

-- +goose Down
DROP VIEW contact_rows;
CREATE VIEW contact_rows AS
SELECT account_id, contact_id, email, email_key, name, phone, email_status, record_status, tags,
    lead_score, assigned_user_email_id, crm_name, crm_url, crm_source, crm_stage,
    crm_created_date, consent_token, num_form_submissions, last_form_submission_at,
    num_email_sends, last_email_send_at, num_email_opens, last_email_open_at, num_email_clicks,
    last_email_click_at, num_dashboard_views, last_dashboard_view_at, num_dashboard_clicks,
    last_dashboard_click_at, num_postcard_scans, last_postcard_scan_at, created_at, updated_at,
    enrich_due_at, enrich_attempts, active_properties, num_ai_handoffs, last_ai_handoff_at
FROM contacts;
DROP TABLE contact_unique_values;
ALTER TABLE accounts DROP COLUMN fields_version;
ALTER TABLE contacts DROP COLUMN custom_fields;
