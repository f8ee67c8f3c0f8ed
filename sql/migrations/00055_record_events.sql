-- +goose Up
-- The one definition of recording events with their planned deliveries. Four statements wrote
-- both inserts themselves (ContactCreate, ContactCreateMany, TagsSwapMany, EventsRecord) and a
-- fifth the events alone (EnrichFinishMany), each a copy with its own small differences; they
-- now pass what they wrote to this function, from inside the statement that makes the change,
-- so that an event is still recorded exactly when its change is.
--
-- It records the events given (a test event is about no contact; uuid.Nil is no contact), and
-- queues the fan-out's planned deliveries of them: a delivery's id is p_delivery_ids' or a
-- UUIDv7 of its due time, which is p_delivery_due's or its event's time, and it is created at
-- p_delivery_created or at its due time. A delivery of an event not given here is queued only
-- when p_replay says its event was recorded before (a replay); otherwise it is of an event its
-- caller did not write (a create that lost a race), and is left out. It returns the number of
-- events recorded: all it is given.
--
-- PL/pgSQL, not SQL: its statement's plan is cached for the session, not made at each call.
-- +goose StatementBegin
CREATE FUNCTION record_events(
    p_account uuid,
    p_event_ids uuid[], p_event_types text[], p_event_contacts uuid[], p_event_payloads text[],
    p_event_times timestamptz[], p_event_traces text[], p_test boolean,
    p_delivery_ids uuid[], p_delivery_event_ids uuid[], p_delivery_subscription_ids uuid[],
    p_delivery_due timestamptz[], p_delivery_created timestamptz, p_replay boolean)
RETURNS integer LANGUAGE plpgsql AS $$
BEGIN
    WITH event AS (
        -- payloads as text: the exact bytes survive ::json
        INSERT INTO webhook_events (account_id, event_id, event_type, contact_id, payload, occurred_at, test, trace)
        SELECT p_account, e.id, e.typ,
               CASE WHEN NOT p_test THEN nullif(e.contact, '00000000-0000-0000-0000-000000000000'::uuid) END,
               e.payload::json, e.at, p_test, nullif(e.trace, '')
        FROM unnest(p_event_ids, p_event_types, p_event_contacts, p_event_payloads, p_event_times, p_event_traces)
            AS e(id, typ, contact, payload, at, trace)
        RETURNING event_id, occurred_at
    )
    INSERT INTO webhook_deliveries (account_id, delivery_id, subscription_id, event_id, next_attempt_at, created_at, updated_at)
    SELECT p_account, coalesce(d.id, uuid_v7(coalesce(d.due, e.occurred_at))), d.subscription, d.event,
           coalesce(d.due, e.occurred_at),
           coalesce(p_delivery_created, d.due, e.occurred_at), coalesce(p_delivery_created, d.due, e.occurred_at)
    FROM unnest(p_delivery_ids, p_delivery_event_ids, p_delivery_subscription_ids, p_delivery_due)
        AS d(id, event, subscription, due)
    LEFT JOIN event e ON e.event_id = d.event
    WHERE e.event_id IS NOT NULL OR p_replay;
    -- every event given is recorded, or the statement fails
    RETURN coalesce(cardinality(p_event_ids), 0);
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION record_events(uuid, uuid[], text[], uuid[], text[], timestamptz[], text[], boolean,
    uuid[], uuid[], uuid[], timestamptz[], timestamptz, boolean);
