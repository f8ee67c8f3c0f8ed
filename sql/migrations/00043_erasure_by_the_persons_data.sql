-- +goose Up
-- An erasure's cost grew with the account's history: it found the receivers' answers about the
-- person's events through every delivery the account kept (no index leads from an event to
-- its deliveries), and the stored answers of Idempotency-Key requests about the person through
-- every stored answer of the account. Now an attempt carries its delivery's event, and the
-- attempts that kept an answer are indexed by it; the stored answers are indexed by the
-- contacts they are about. An erasure reads what is about the person.
ALTER TABLE webhook_attempts ADD COLUMN event_id uuid;
UPDATE webhook_attempts a SET event_id = d.event_id
FROM webhook_deliveries d WHERE d.account_id = a.account_id AND d.delivery_id = a.delivery_id;
CREATE INDEX webhook_attempts_answers ON webhook_attempts (account_id, event_id) WHERE response_excerpt IS NOT NULL;

-- The previous release, while a rolling upgrade runs both, inserts attempts without their
-- delivery's event (and subscription: migration 00041); they are filled from the delivery as
-- they are inserted. This release sets both, and the function never runs for its attempts.
-- +goose StatementBegin
CREATE FUNCTION webhook_attempts_of_delivery() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    SELECT d.subscription_id, d.event_id INTO NEW.subscription_id, NEW.event_id
    FROM webhook_deliveries d WHERE d.account_id = NEW.account_id AND d.delivery_id = NEW.delivery_id;
    RETURN NEW;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER webhook_attempts_of_delivery BEFORE INSERT ON webhook_attempts
    FOR EACH ROW WHEN (NEW.event_id IS NULL OR NEW.subscription_id IS NULL)
    EXECUTE FUNCTION webhook_attempts_of_delivery();

CREATE INDEX idempotency_keys_contacts ON idempotency_keys USING gin (account_id, contact_ids);

-- +goose Down
DROP INDEX idempotency_keys_contacts;
DROP TRIGGER webhook_attempts_of_delivery ON webhook_attempts;
DROP FUNCTION webhook_attempts_of_delivery();
DROP INDEX webhook_attempts_answers;
ALTER TABLE webhook_attempts DROP COLUMN event_id;
