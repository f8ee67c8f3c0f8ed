-- +goose Up
-- The console's sessions: an API key exchanged for a session at sign-in. Only the session
-- token's SHA-256 is kept; the key is never stored again (key_id names it, and every request
-- checks it is still valid). csrf_token is the token each form of the session carries.
CREATE TABLE console_sessions (
    session_hash bytea PRIMARY KEY,
    account_id   uuid NOT NULL,
    key_id       uuid NOT NULL,
    csrf_token   text NOT NULL,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    FOREIGN KEY (account_id, key_id) REFERENCES api_keys ON DELETE CASCADE
);
CREATE INDEX console_sessions_expires ON console_sessions (expires_at);
CREATE INDEX console_sessions_key ON console_sessions (account_id, key_id);
-- a contact's events in order, for its page in the console
CREATE INDEX webhook_events_contact ON webhook_events (account_id, contact_id, event_id);

-- +goose Down
DROP INDEX webhook_events_contact;
DROP TABLE console_sessions;
