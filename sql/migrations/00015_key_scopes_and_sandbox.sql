-- +goose Up
-- Keys people can trust: a key's scopes ('all': every one), an expiry, and the networks it may
-- be used from (none: anywhere).
ALTER TABLE api_keys
    ADD COLUMN scopes text[] NOT NULL DEFAULT '{all}',
    ADD COLUMN expires_at timestamptz,
    ADD COLUMN allowed_networks cidr[] NOT NULL DEFAULT '{}';
-- An account's sandbox is an account of its own that names its live account: test keys
-- (ck_test_) belong to it, so test data lives apart from live data by the same account
-- boundary every query already keeps. It goes with its live account. Names stay unique among
-- live accounts; a sandbox carries its live account's name.
ALTER TABLE accounts ADD COLUMN live_account_id uuid REFERENCES accounts ON DELETE CASCADE;
CREATE UNIQUE INDEX accounts_sandbox ON accounts (live_account_id) WHERE live_account_id IS NOT NULL;
ALTER TABLE accounts DROP CONSTRAINT accounts_name_key;
CREATE UNIQUE INDEX accounts_name_key ON accounts (name) WHERE live_account_id IS NULL;

-- +goose Down
DROP INDEX accounts_name_key;
DELETE FROM accounts WHERE live_account_id IS NOT NULL;
ALTER TABLE accounts ADD CONSTRAINT accounts_name_key UNIQUE (name);
DROP INDEX accounts_sandbox;
ALTER TABLE accounts DROP COLUMN live_account_id;
ALTER TABLE api_keys DROP COLUMN allowed_networks, DROP COLUMN expires_at, DROP COLUMN scopes;
