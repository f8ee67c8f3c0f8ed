-- +goose Up
-- Erasure and suppression (issue 32). An erased person's email and phone stay only as keyed
-- hashes (suppressions.digest: HMAC-SHA256 under suppression_key, sealed with the operator's
-- key, of the account, the kind and the normalised value), which creates refuse until an
-- operator lifts them. Each erasure is recorded for audit without personal data.

-- One key for every account's digests, random, sealed like the webhook secrets (so `contactd
-- secrets rekey` reseals it and a rotation of the operator's key keeps every digest valid).
CREATE TABLE suppression_key (
    singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    key_sealed text NOT NULL,
    created_at timestamptz NOT NULL
);

CREATE TABLE suppressions (
    account_id uuid NOT NULL REFERENCES accounts ON DELETE CASCADE,
    digest     bytea NOT NULL,
    kind       text NOT NULL CHECK (kind IN ('email', 'phone')),
    erasure_id uuid,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (account_id, digest)
);

CREATE TABLE erasures (
    account_id      uuid NOT NULL REFERENCES accounts ON DELETE CASCADE,
    erasure_id      uuid NOT NULL,
    contact_id      uuid NOT NULL,
    erased_at       timestamptz NOT NULL,
    -- which key asked: its id, prefix and name as they were (the key may be revoked later)
    key_id          uuid NOT NULL,
    key_prefix      text NOT NULL,
    key_name        text NOT NULL,
    suppressed      text[] NOT NULL,
    events_redacted integer NOT NULL,
    PRIMARY KEY (account_id, erasure_id)
);

-- The contacts a stored Idempotency-Key response is about (in its path or as a contactId in
-- its body), so an erasure finds the stored responses that carry the person's data.
ALTER TABLE idempotency_keys ADD COLUMN contact_ids uuid[] NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE idempotency_keys DROP COLUMN contact_ids;
DROP TABLE erasures;
DROP TABLE suppressions;
DROP TABLE suppression_key;
