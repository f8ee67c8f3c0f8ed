-- +goose Up
-- Every contact has exactly one consent record, written by the statement that creates it and
-- never changed: a row of its own cost every create a second heap row, its primary key entry
-- and a foreign-key check of the new contact (a sixth of a create's time in PostgreSQL). The
-- record now lives on the contact row; its time is the contact's created_at (the create
-- statement copied it), and the token's uniqueness is back on contacts (migration 3 had
-- left it to consents.token). Reads go through contact_rows, which leaves the record out,
-- so a GET does not carry it.
ALTER TABLE contacts
    ADD COLUMN consent_api_key_name   text NOT NULL DEFAULT '',
    ADD COLUMN consent_api_key_prefix text NOT NULL DEFAULT '',
    ADD COLUMN consent_source_ip      text NOT NULL DEFAULT '',
    ADD COLUMN consent_user_agent     text NOT NULL DEFAULT '',
    ADD COLUMN consent_fields         jsonb NOT NULL DEFAULT '{}';

UPDATE contacts c SET
    consent_api_key_name = s.api_key_name, consent_api_key_prefix = s.api_key_prefix,
    consent_source_ip = s.source_ip, consent_user_agent = s.user_agent, consent_fields = s.fields
FROM consents s
WHERE s.account_id = c.account_id AND s.contact_id = c.contact_id;

-- the defaults only filled existing rows: a create must say how the contact came in.
ALTER TABLE contacts
    ALTER COLUMN consent_api_key_name DROP DEFAULT,
    ALTER COLUMN consent_api_key_prefix DROP DEFAULT,
    ALTER COLUMN consent_source_ip DROP DEFAULT,
    ALTER COLUMN consent_user_agent DROP DEFAULT,
    ALTER COLUMN consent_fields DROP DEFAULT;

ALTER TABLE contacts ADD CONSTRAINT contacts_consent_token_key UNIQUE (consent_token);
DROP TABLE consents;

-- A contact as the API reads it: every column but the consent record's.
CREATE VIEW contact_rows AS
SELECT account_id, contact_id, email, email_key, name, phone, email_status, record_status, tags,
    lead_score, assigned_user_email_id, crm_name, crm_url, crm_source, crm_stage,
    crm_created_date, consent_token, num_form_submissions, last_form_submission_at,
    num_email_sends, last_email_send_at, num_email_opens, last_email_open_at, num_email_clicks,
    last_email_click_at, num_dashboard_views, last_dashboard_view_at, num_dashboard_clicks,
    last_dashboard_click_at, num_postcard_scans, last_postcard_scan_at, created_at, updated_at,
    enrich_due_at, enrich_attempts, active_properties
FROM contacts;

-- +goose Down
DROP VIEW contact_rows;

CREATE TABLE consents (
    account_id     uuid NOT NULL,
    contact_id     uuid NOT NULL,
    token          text NOT NULL UNIQUE,
    created_at     timestamptz NOT NULL,
    api_key_name   text NOT NULL,
    api_key_prefix text NOT NULL,
    source_ip      text NOT NULL,
    user_agent     text NOT NULL,
    fields         jsonb NOT NULL,
    PRIMARY KEY (account_id, contact_id),
    FOREIGN KEY (account_id, contact_id) REFERENCES contacts ON DELETE CASCADE
);
INSERT INTO consents (account_id, contact_id, token, created_at, api_key_name, api_key_prefix,
    source_ip, user_agent, fields)
SELECT account_id, contact_id, consent_token, created_at, consent_api_key_name,
    consent_api_key_prefix, consent_source_ip, consent_user_agent, consent_fields
FROM contacts;

ALTER TABLE contacts DROP CONSTRAINT contacts_consent_token_key;
ALTER TABLE contacts
    DROP COLUMN consent_api_key_name,
    DROP COLUMN consent_api_key_prefix,
    DROP COLUMN consent_source_ip,
    DROP COLUMN consent_user_agent,
    DROP COLUMN consent_fields;
