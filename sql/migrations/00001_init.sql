-- +goose Up
-- Every table is keyed by account_id first, so every query is scoped to one account and the
-- schema can be distributed by account when one database is not enough.

CREATE TABLE accounts (
    account_id uuid PRIMARY KEY,
    name       text NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 128),
    created_at timestamptz NOT NULL
);

-- API keys are stored only as SHA-256 hashes; prefix is the visible part used to name a key.
CREATE TABLE api_keys (
    account_id   uuid NOT NULL REFERENCES accounts ON DELETE CASCADE,
    key_id       uuid NOT NULL,
    name         text NOT NULL,
    prefix       text NOT NULL UNIQUE,
    key_hash     bytea NOT NULL UNIQUE,
    created_at   timestamptz NOT NULL,
    last_used_at timestamptz,
    revoked_at   timestamptz,
    PRIMARY KEY (account_id, key_id)
);

CREATE TABLE contacts (
    account_id             uuid NOT NULL REFERENCES accounts ON DELETE CASCADE,
    contact_id             uuid NOT NULL,
    email                  text NOT NULL,
    -- the dedupe key: lower(trim(email)); email keeps the client's spelling.
    email_key              text NOT NULL,
    name                   text,
    phone                  text,
    email_status           text NOT NULL DEFAULT 'Pending'
                           CHECK (email_status IN ('Pending', 'Valid', 'Invalid')),
    record_status          text NOT NULL DEFAULT 'Marketing'
                           CHECK (record_status IN ('Marketing', 'NonMarketing')),
    -- tags live on the row, in insertion order: one read returns them, no join.
    tags                   text[] NOT NULL DEFAULT '{}',
    lead_score             integer NOT NULL DEFAULT 0 CHECK (lead_score BETWEEN 0 AND 100),
    assigned_user_email_id text,
    crm_name               text,
    crm_url                text,
    crm_source             text,
    crm_stage              text,
    crm_created_date       timestamptz,
    consent_token          text NOT NULL UNIQUE,
    num_form_submissions   integer NOT NULL DEFAULT 0,
    last_form_submission_at timestamptz,
    num_email_sends        integer NOT NULL DEFAULT 0,
    last_email_send_at     timestamptz,
    num_email_opens        integer NOT NULL DEFAULT 0,
    last_email_open_at     timestamptz,
    num_email_clicks       integer NOT NULL DEFAULT 0,
    last_email_click_at    timestamptz,
    num_dashboard_views    integer NOT NULL DEFAULT 0,
    last_dashboard_view_at timestamptz,
    num_dashboard_clicks   integer NOT NULL DEFAULT 0,
    last_dashboard_click_at timestamptz,
    num_postcard_scans     integer NOT NULL DEFAULT 0,
    last_postcard_scan_at  timestamptz,
    created_at             timestamptz NOT NULL,
    updated_at             timestamptz NOT NULL,
    PRIMARY KEY (account_id, contact_id),
    UNIQUE (account_id, email_key)
);

CREATE TABLE properties (
    account_id        uuid NOT NULL,
    property_id       uuid NOT NULL,
    contact_id        uuid NOT NULL,
    raw_address       text NOT NULL,
    apt_or_unit_number text NOT NULL,
    street_address    text NOT NULL,
    city              text NOT NULL,
    county            text NOT NULL,
    state             text NOT NULL,
    zip               text NOT NULL,
    -- the standardised one-line form, for duplicate detection.
    normalized        text NOT NULL,
    archived_at       timestamptz,
    created_at        timestamptz NOT NULL,
    PRIMARY KEY (account_id, property_id),
    FOREIGN KEY (account_id, contact_id) REFERENCES contacts ON DELETE CASCADE
);
CREATE UNIQUE INDEX properties_active_normalized
    ON properties (account_id, contact_id, normalized) WHERE archived_at IS NULL;
CREATE INDEX properties_contact ON properties (account_id, contact_id);

-- How each contact entered the system, shown at its proof-of-consent URL.
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

CREATE TABLE activities (
    account_id  uuid NOT NULL,
    contact_id  uuid NOT NULL,
    activity_id text NOT NULL,
    type        text NOT NULL,
    occurred_at timestamptz NOT NULL,
    details     jsonb,
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (account_id, contact_id, activity_id),
    FOREIGN KEY (account_id, contact_id) REFERENCES contacts ON DELETE CASCADE
);

CREATE TABLE webhook_subscriptions (
    account_id           uuid NOT NULL REFERENCES accounts ON DELETE CASCADE,
    subscription_id      uuid NOT NULL,
    url                  text NOT NULL,
    event_type           text NOT NULL,
    status               text NOT NULL DEFAULT 'Active'
                         CHECK (status IN ('Active', 'Failing', 'Removed')),
    -- needed in clear to sign deliveries; never returned after creation.
    secret               text NOT NULL,
    consecutive_failures integer NOT NULL DEFAULT 0,
    last_success_at      timestamptz,
    failing_since        timestamptz,
    created_at           timestamptz NOT NULL,
    updated_at           timestamptz NOT NULL,
    PRIMARY KEY (account_id, subscription_id)
);
CREATE INDEX webhook_subscriptions_live
    ON webhook_subscriptions (account_id, event_type) WHERE status <> 'Removed';

-- The outbox: written in the transaction of the change that caused the event.
CREATE TABLE webhook_events (
    account_id  uuid NOT NULL REFERENCES accounts ON DELETE CASCADE,
    event_id    uuid NOT NULL,
    event_type  text NOT NULL,
    contact_id  uuid,
    -- json, not jsonb: the exact text that is signed and sent.
    payload     json NOT NULL,
    occurred_at timestamptz NOT NULL,
    PRIMARY KEY (account_id, event_id)
);

-- One row per (event, subscription); its attempts are kept for visibility and redelivery.
CREATE TABLE webhook_deliveries (
    account_id      uuid NOT NULL,
    delivery_id     uuid NOT NULL,
    subscription_id uuid NOT NULL,
    event_id        uuid NOT NULL,
    status          text NOT NULL DEFAULT 'Pending'
                    CHECK (status IN ('Pending', 'Succeeded', 'Failed')),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    PRIMARY KEY (account_id, delivery_id),
    FOREIGN KEY (account_id, subscription_id) REFERENCES webhook_subscriptions ON DELETE CASCADE,
    FOREIGN KEY (account_id, event_id) REFERENCES webhook_events ON DELETE CASCADE
);
CREATE INDEX webhook_deliveries_subscription
    ON webhook_deliveries (account_id, subscription_id, delivery_id DESC);

CREATE TABLE webhook_attempts (
    account_id      uuid NOT NULL,
    delivery_id     uuid NOT NULL,
    attempt         integer NOT NULL,
    attempted_at    timestamptz NOT NULL,
    response_status integer,
    latency_ms      integer NOT NULL,
    error           text,
    next_attempt_at timestamptz,
    PRIMARY KEY (account_id, delivery_id, attempt),
    FOREIGN KEY (account_id, delivery_id) REFERENCES webhook_deliveries ON DELETE CASCADE
);

-- +goose Down
DROP TABLE webhook_attempts, webhook_deliveries, webhook_events, webhook_subscriptions,
    activities, consents, properties, contacts, api_keys, accounts;
