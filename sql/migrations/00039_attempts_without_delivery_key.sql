-- +goose Up
-- Every attempt recorded checked its delivery through a foreign key: a probe of the
-- deliveries' key and SELECT ... FOR KEY SHARE on the delivery's row, a lock record in the WAL,
-- at the end of the very statement that updates that row (DeliveryRecordSuccess), once per
-- delivery made. The key goes. An attempt is now inserted only from its delivery's row,
-- updated (and so locked) in the same statement or transaction, so none is written for a
-- delivery that is gone; and the cascade is a trigger: the attempts of the deliveries a
-- statement deletes go with them, for every statement that deletes deliveries (the
-- retention, a sandbox's reset, an account's deletion), the previous release's included.
ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_account_id_delivery_id_fkey;

-- +goose StatementBegin
CREATE FUNCTION webhook_deliveries_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM webhook_attempts a USING gone g
    WHERE a.account_id = g.account_id AND a.delivery_id = g.delivery_id;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER webhook_deliveries_gone AFTER DELETE ON webhook_deliveries
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION webhook_deliveries_gone();

-- +goose Down
DROP TRIGGER webhook_deliveries_gone ON webhook_deliveries;
DROP FUNCTION webhook_deliveries_gone();
DELETE FROM webhook_attempts a WHERE NOT EXISTS (
    SELECT 1 FROM webhook_deliveries d WHERE d.account_id = a.account_id AND d.delivery_id = a.delivery_id);
ALTER TABLE webhook_attempts ADD CONSTRAINT webhook_attempts_account_id_delivery_id_fkey
    FOREIGN KEY (account_id, delivery_id) REFERENCES webhook_deliveries ON DELETE CASCADE;
