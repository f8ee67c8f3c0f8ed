-- +goose Up
-- The consent token is unique through consents.token, where the create statement copies it
-- from the contact; a second unique index on contacts cost every create, and every update
-- that cannot be HOT, one more index insertion for nothing.
ALTER TABLE contacts DROP CONSTRAINT contacts_consent_token_key;

-- +goose Down
ALTER TABLE contacts ADD CONSTRAINT contacts_consent_token_key UNIQUE (consent_token);
