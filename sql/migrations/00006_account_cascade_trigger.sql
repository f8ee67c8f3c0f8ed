-- +goose Up
-- Every contact and every event of an account pointed at the account's one row through a
-- foreign key, and each insert checked it with SELECT ... FOR KEY SHARE on that row: with
-- many writers in one account (a CRM sync, a click storm) the shared locks pile up on one
-- tuple as multixacts, five times the cost of the contact row's own key checks, about a tenth
-- of a create's time in PostgreSQL. Rows get their account_id from the authenticated key
-- (api_keys keeps its foreign key), and contactd never deletes an account; deleting one by
-- hand still removes all of its data, through this trigger instead of ON DELETE CASCADE. A
-- write racing such a deletion (a key still cached) can leave a row of the deleted account
-- behind, reachable by no key; going back before this migration removes those.
ALTER TABLE contacts DROP CONSTRAINT contacts_account_id_fkey;
ALTER TABLE webhook_events DROP CONSTRAINT webhook_events_account_id_fkey;

-- +goose StatementBegin
CREATE FUNCTION accounts_delete_data() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM webhook_events WHERE account_id = OLD.account_id;
    DELETE FROM contacts WHERE account_id = OLD.account_id;
    RETURN OLD;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER accounts_delete_data BEFORE DELETE ON accounts
    FOR EACH ROW EXECUTE FUNCTION accounts_delete_data();

-- +goose Down
DROP TRIGGER accounts_delete_data ON accounts;
DROP FUNCTION accounts_delete_data();
-- rows an account deletion raced past would fail the constraints: they go first.
DELETE FROM webhook_events e WHERE NOT EXISTS (SELECT 1 FROM accounts a WHERE a.account_id = e.account_id);
DELETE FROM contacts c WHERE NOT EXISTS (SELECT 1 FROM accounts a WHERE a.account_id = c.account_id);
ALTER TABLE contacts ADD CONSTRAINT contacts_account_id_fkey
    FOREIGN KEY (account_id) REFERENCES accounts ON DELETE CASCADE;
ALTER TABLE webhook_events ADD CONSTRAINT webhook_events_account_id_fkey
    FOREIGN KEY (account_id) REFERENCES accounts ON DELETE CASCADE;
