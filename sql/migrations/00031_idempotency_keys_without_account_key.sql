-- +goose Up
-- A write sent with an Idempotency-Key stores its answer in idempotency_keys, whose foreign
-- key to accounts took FOR KEY SHARE on the account's one row: concurrent keyed writes of an
-- account shared that lock as a multixact, one a write (contactbench store-cost: 0.96
-- multixacts and a lock record per keyed create), as contacts and events did before 00006.
-- The row's account_id comes from the authenticated key; deleting an account still deletes
-- them, through 00006's trigger, which now names this table too.
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_account_id_fkey;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION accounts_delete_data() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM webhook_events WHERE account_id = OLD.account_id;
    DELETE FROM contacts WHERE account_id = OLD.account_id;
    DELETE FROM idempotency_keys WHERE account_id = OLD.account_id;
    RETURN OLD;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION accounts_delete_data() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM webhook_events WHERE account_id = OLD.account_id;
    DELETE FROM contacts WHERE account_id = OLD.account_id;
    RETURN OLD;
END
$$;
-- +goose StatementEnd
DELETE FROM idempotency_keys k WHERE NOT EXISTS (SELECT 1 FROM accounts a WHERE a.account_id = k.account_id);
ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_account_id_fkey
    FOREIGN KEY (account_id) REFERENCES accounts ON DELETE CASCADE;
