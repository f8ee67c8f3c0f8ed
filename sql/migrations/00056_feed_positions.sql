-- +goose Up
-- An account's events feed shows an event once nothing can still land before it: until now,
-- once every transaction of the cluster older than the event's had ended (the snapshot's
-- xmin), so one account's long transaction held back every other account's feed. Now each
-- event's place in the feed (webhook_events.xid, read as a position) is taken by record_events
-- under a lock that names its account, and a reader of the feed waits only for the
-- transactions that hold its account's lock (event.Feed.Page, EventsFeedHorizon):
--
--   1. record_events reads the next transaction id, p, and takes a transaction-scoped shared
--      advisory lock (hashtext(account), low 32 bits of p): readers see it in pg_locks until
--      the transaction ends;
--   2. then it reads the next transaction id again, q >= p, and records the events at q.
--
-- A reader first reads, in one statement, the next transaction id x and the least p of the
-- locks naming its account: its horizon is the lesser. Then, in a later statement (a new
-- snapshot), it returns the committed events placed below the horizon. An event placed below
-- it was recorded by a transaction whose lock was taken before the reader looked (q < x) and
-- not held then (else the horizon would be at most its p <= q): it had ended, so the later
-- snapshot sees it. A transaction that locks after the reader looked places its events at
-- q >= x >= the horizon: after the reader's cursor. So no event lands behind a cursor handed out.
--
-- A transaction locks an account once (a transaction-local setting remembers it). The place
-- is read in a new snapshot: record_events must run in read committed transactions (all of
-- contactd's writes do), where each statement takes one.
-- +goose StatementBegin
CREATE FUNCTION feed_lock(p_account uuid) RETURNS void LANGUAGE sql VOLATILE AS $$
    SELECT pg_advisory_xact_lock_shared(hashtext(p_account::text),
               (n.low - CASE WHEN n.low >= 2147483648 THEN 4294967296 ELSE 0 END)::integer),
           set_config('contactd.feed_' || replace(p_account::text, '-', ''), 'held', true)
    FROM (SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint & 4294967295 AS low) n
    WHERE coalesce(current_setting('contactd.feed_' || replace(p_account::text, '-', ''), true), '') = ''
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION record_events(
    p_account uuid,
    p_event_ids uuid[], p_event_types text[], p_event_contacts uuid[], p_event_payloads text[],
    p_event_times timestamptz[], p_event_traces text[], p_test boolean,
    p_delivery_ids uuid[], p_delivery_event_ids uuid[], p_delivery_subscription_ids uuid[],
    p_delivery_due timestamptz[], p_delivery_created timestamptz, p_replay boolean)
RETURNS integer LANGUAGE plpgsql AS $$
BEGIN
    PERFORM feed_lock(p_account) WHERE coalesce(cardinality(p_event_ids), 0) > 0;
    -- a new statement, a new snapshot: the events' place is the next transaction id now that
    -- the lock is seen
    WITH event AS (
        -- payloads as text: the exact bytes survive ::json
        INSERT INTO webhook_events (account_id, event_id, event_type, contact_id, payload, occurred_at, test, trace, xid)
        SELECT p_account, e.id, e.typ,
               CASE WHEN NOT p_test THEN nullif(e.contact, '00000000-0000-0000-0000-000000000000'::uuid) END,
               e.payload::json, e.at, p_test, nullif(e.trace, ''), pg_snapshot_xmax(pg_current_snapshot())
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

-- feed_horizon is where the account's feed may read up to now: the next transaction id, or
-- the least place a transaction holding the account's feed lock may still record events at
-- (a lock names the low 32 bits of its place; the full place is the one at or below the next
-- transaction id with those bits). The page is read by a later statement.
-- +goose StatementBegin
CREATE FUNCTION feed_horizon(p_account uuid) RETURNS xid8 LANGUAGE sql VOLATILE AS $$
    WITH n AS (SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS next)
    SELECT least(n.next, min(n.next - ((n.next - l.objid::text::bigint) & 4294967295)))::text::xid8
    FROM n LEFT JOIN pg_locks l ON l.locktype = 'advisory' AND l.objsubid = 2
        AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND l.classid = hashtext(p_account::text)::oid
    GROUP BY n.next
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION feed_horizon(uuid);
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION record_events(
    p_account uuid,
    p_event_ids uuid[], p_event_types text[], p_event_contacts uuid[], p_event_payloads text[],
    p_event_times timestamptz[], p_event_traces text[], p_test boolean,
    p_delivery_ids uuid[], p_delivery_event_ids uuid[], p_delivery_subscription_ids uuid[],
    p_delivery_due timestamptz[], p_delivery_created timestamptz, p_replay boolean)
RETURNS integer LANGUAGE plpgsql AS $$
BEGIN
    WITH event AS (
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
    RETURN coalesce(cardinality(p_event_ids), 0);
END
$$;
-- +goose StatementEnd

DROP FUNCTION feed_lock(uuid);
