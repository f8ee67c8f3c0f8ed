-- +goose Up
-- The batch insert is a query of its own now (ContactCreateMany in sql/queries/contacts.sql,
-- typed by sqlc), so a column change no longer needs a migration that rewrites a function.
-- A release before this one calls create_contacts: roll an upgrade from it out with batch
-- writes drained first, or run this migration after its last process has stopped.
DROP FUNCTION create_contacts(uuid, jsonb, text, text, text, text, timestamptz, integer);

-- +goose Down
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
