-- +goose Up
-- Idempotency-Key: the first response to a write sent with a key, kept per account and key
-- for 24 hours (expires_at) and replayed to a retry of the same request. The row is written
-- in the transaction of the request's own changes, so a response is stored exactly when the
-- change it reports committed. fingerprint is SHA-256 of the method, path, query and body.
CREATE TABLE idempotency_keys (
    account_id  uuid NOT NULL REFERENCES accounts ON DELETE CASCADE,
    key         text NOT NULL,
    fingerprint bytea NOT NULL,
    method      text NOT NULL,
    path        text NOT NULL,
    status      integer NOT NULL,
    headers     jsonb NOT NULL,
    body        bytea NOT NULL,
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    PRIMARY KEY (account_id, key)
);
CREATE INDEX idempotency_keys_expires ON idempotency_keys (expires_at);

-- +goose Down
DROP TABLE idempotency_keys;
