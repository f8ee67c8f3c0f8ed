-- +goose Up
-- Merged duplicates (issue 32). A merge deletes each duplicate's row; what must outlive it is
-- kept here: its id, which answers for the primary (merged_into) as long as the primary
-- exists; its consent record, whose proof-of-consent URL still answers; and its email key and
-- phone, which an erasure of the primary puts on the suppression list with the primary's.
-- Deleting or erasing the primary takes these rows with it.
CREATE TABLE contact_merges (
    account_id             uuid NOT NULL,
    contact_id             uuid NOT NULL,
    merged_into            uuid NOT NULL,
    merged_at              timestamptz NOT NULL,
    email_key              text NOT NULL,
    phone                  text,
    consent_token          text NOT NULL UNIQUE,
    consent_created_at     timestamptz NOT NULL,
    consent_api_key_name   text NOT NULL,
    consent_api_key_prefix text NOT NULL,
    consent_source_ip      text NOT NULL,
    consent_user_agent     text NOT NULL,
    consent_fields         jsonb NOT NULL,
    PRIMARY KEY (account_id, contact_id),
    FOREIGN KEY (account_id, merged_into) REFERENCES contacts (account_id, contact_id) ON DELETE CASCADE
);
CREATE INDEX contact_merges_into ON contact_merges (account_id, merged_into);

-- +goose Down
DROP TABLE contact_merges;
