-- +goose Up
-- create_contacts inserts a batch's new contacts in one statement (POST /contacts/batch,
-- contactd import): each with its consent record (the batch's origin: p_key_name ...
-- p_user_agent), its first property and its TagsAdded event, as ContactCreate does for one.
-- p_rows is a JSON array of objects with the columns below; event_payload is the event's
-- exact text as a JSON string (the payload column is json: the bytes that are signed).
-- Contacts are inserted in email order, so concurrent batches take the email keys in one
-- order; ON CONFLICT DO NOTHING skips emails the account has (waiting first for a transaction
-- that has just inserted one). It returns the contacts it inserted. (A function because sqlc
-- cannot read a column definition list.)
-- +goose StatementBegin
CREATE FUNCTION create_contacts(p_account uuid, p_rows jsonb, p_key_name text, p_key_prefix text,
    p_source_ip text, p_user_agent text, p_created_at timestamptz, p_parsed_by integer)
RETURNS TABLE (contact_id uuid) LANGUAGE sql AS $$
WITH input AS (
    SELECT * FROM jsonb_to_recordset(p_rows) AS r(
        contact_id uuid, email text, email_key text, name text, phone text, tags text[],
        assigned_user_email_id text, crm_name text, crm_url text, crm_source text, crm_stage text,
        crm_created_date timestamptz, consent_token text, consent_fields jsonb, active_properties jsonb,
        property_id uuid, raw_address text, apt_or_unit_number text, street_address text, city text,
        county text, state text, zip text, normalized text, event_id uuid, event_payload text)
), c AS (
    INSERT INTO contacts (
        account_id, contact_id, email, email_key, name, phone, tags, assigned_user_email_id,
        crm_name, crm_url, crm_source, crm_stage, crm_created_date, consent_token,
        consent_api_key_name, consent_api_key_prefix, consent_source_ip, consent_user_agent,
        consent_fields, created_at, updated_at, enrich_due_at, active_properties, addresses_parsed_by
    )
    SELECT p_account, i.contact_id, i.email, i.email_key, i.name, i.phone, i.tags,
           i.assigned_user_email_id, i.crm_name, i.crm_url, i.crm_source, i.crm_stage, i.crm_created_date,
           i.consent_token, p_key_name, p_key_prefix, p_source_ip, p_user_agent, i.consent_fields,
           p_created_at, p_created_at, p_created_at, i.active_properties, p_parsed_by
    FROM input i
    ORDER BY i.email_key
    ON CONFLICT (account_id, email_key) DO NOTHING
    RETURNING contacts.contact_id
), property AS (
    INSERT INTO properties (
        account_id, property_id, contact_id, raw_address, apt_or_unit_number, street_address,
        city, county, state, zip, normalized, created_at
    )
    SELECT p_account, i.property_id, i.contact_id, i.raw_address, i.apt_or_unit_number,
           i.street_address, i.city, i.county, i.state, i.zip, i.normalized, p_created_at
    FROM input i JOIN c ON c.contact_id = i.contact_id
    WHERE i.property_id IS NOT NULL
), event AS (
    INSERT INTO webhook_events (account_id, event_id, event_type, contact_id, payload, occurred_at)
    SELECT p_account, i.event_id, 'TagsAdded', i.contact_id, i.event_payload::json, p_created_at
    FROM input i JOIN c ON c.contact_id = i.contact_id
    WHERE i.event_id IS NOT NULL
)
SELECT c.contact_id FROM c
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION create_contacts(uuid, jsonb, text, text, text, text, timestamptz, integer);
