-- +goose Up
-- A receiver's limit of attempts at once (CONTACTD_WEBHOOK_MAX_IN_FLIGHT) holds under
-- concurrency. The dispatcher's claim counted the leases held per receiver while a worker that
-- had just finished an attempt leased the same receiver's next delivery without counting: run
-- at the same moment, both took the room one attempt had freed (5 at once against a limit of
-- 4, seen by TestHangingReceiversDelayOnlyThemselves on a busy machine); dispatchers in two
-- processes could do the same. Now the dispatcher claims alone (claim_deliveries_alone: an
-- advisory lock of the transaction, then claim_deliveries of 00012 unchanged), and a
-- worker's next claim takes that lock shared, plus one per receiver, never waiting for
-- either, and counts the receiver's leases before it takes one.
-- +goose StatementBegin
CREATE FUNCTION claim_deliveries_alone(p_now timestamptz, p_lease_until timestamptz, p_max int,
    p_max_in_flight int, p_throttle_share float8)
RETURNS TABLE (account_id uuid, delivery_id uuid, status text, attempts int, subscription_id uuid,
    event_id uuid, event_type text, payload text, url text, secret text, secret_sealed text,
    previous_secret_sealed text, previous_secret_until timestamptz, subscription_status text,
    client_secret_sealed text)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
-- one dispatcher at a time, in every process, and no worker's claim_next_delivery meanwhile:
-- claim_deliveries (a fresh snapshot, being VOLATILE) then counts the leases held per
-- receiver knowing no other claim is adding to them
PERFORM pg_advisory_xact_lock(hashtextextended('contactd.claim_deliveries', 0));
RETURN QUERY SELECT * FROM claim_deliveries(p_now, p_lease_until, p_max, p_max_in_flight, p_throttle_share);
END
$$;
-- +goose StatementEnd

DROP FUNCTION claim_next_delivery(uuid, uuid, timestamptz, timestamptz);
-- +goose StatementBegin
CREATE FUNCTION claim_next_delivery(p_account uuid, p_subscription uuid, p_now timestamptz, p_lease_until timestamptz,
    p_max_in_flight int)
RETURNS TABLE (account_id uuid, delivery_id uuid, status text, attempts int, subscription_id uuid,
    event_id uuid, event_type text, payload text, url text, secret text, secret_sealed text,
    previous_secret_sealed text, previous_secret_until timestamptz, subscription_status text,
    client_secret_sealed text)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    v_url text;
    v_lim int;
BEGIN
SELECT s.url, CASE WHEN s.consecutive_failures > 0 OR s.last_success_at IS NULL THEN 1 ELSE p_max_in_flight END
INTO v_url, v_lim
FROM webhook_subscriptions s WHERE s.account_id = p_account AND s.subscription_id = p_subscription;
-- never waits: while the dispatcher claims, or another worker claims for the same receiver,
-- this worker stops and the dispatcher's next claim finds the delivery
IF v_url IS NULL OR NOT pg_try_advisory_xact_lock_shared(hashtextextended('contactd.claim_deliveries', 0))
   OR NOT pg_try_advisory_xact_lock(hashtextextended('contactd.claim_next/' || v_url, 0)) THEN
    RETURN;
END IF;
RETURN QUERY
WITH due AS (
    SELECT q.account_id, q.delivery_id FROM webhook_deliveries q
    WHERE q.account_id = p_account AND q.subscription_id = p_subscription
      AND q.status = 'Pending' AND q.next_attempt_at <= p_now
      AND EXISTS (SELECT 1 FROM webhook_subscriptions s WHERE s.account_id = p_account AND s.subscription_id = p_subscription
                  AND s.max_per_second IS NULL AND (s.next_send_at IS NULL OR s.next_send_at <= p_now))
      -- the receiver below its limit, counted under the locks above
      AND (SELECT count(*) FROM webhook_deliveries l
           JOIN webhook_subscriptions ls ON ls.account_id = l.account_id AND ls.subscription_id = l.subscription_id
           WHERE l.leased_until > p_now AND ls.url = v_url) < v_lim
    ORDER BY q.next_attempt_at
    LIMIT 1
    FOR UPDATE SKIP LOCKED
)
UPDATE webhook_deliveries d
SET next_attempt_at = p_lease_until, leased_until = p_lease_until
FROM due, webhook_events e, webhook_subscriptions s
WHERE d.account_id = due.account_id AND d.delivery_id = due.delivery_id
  AND e.account_id = d.account_id AND e.event_id = d.event_id
  AND s.account_id = d.account_id AND s.subscription_id = d.subscription_id
RETURNING d.account_id, d.delivery_id, d.status, d.attempts, d.subscription_id, e.event_id, e.event_type,
    e.payload::text AS payload, s.url, s.secret, s.secret_sealed, s.previous_secret_sealed, s.previous_secret_until,
    s.status AS subscription_status,
    (SELECT a.client_secret_sealed FROM accounts a WHERE a.account_id = d.account_id) AS client_secret_sealed;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION claim_deliveries_alone(timestamptz, timestamptz, int, int, float8);
DROP FUNCTION claim_next_delivery(uuid, uuid, timestamptz, timestamptz, int);
-- +goose StatementBegin
CREATE FUNCTION claim_next_delivery(p_account uuid, p_subscription uuid, p_now timestamptz, p_lease_until timestamptz)
RETURNS TABLE (account_id uuid, delivery_id uuid, status text, attempts int, subscription_id uuid,
    event_id uuid, event_type text, payload text, url text, secret text, secret_sealed text,
    previous_secret_sealed text, previous_secret_until timestamptz, subscription_status text,
    client_secret_sealed text)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
BEGIN
RETURN QUERY
WITH due AS (
    SELECT q.account_id, q.delivery_id FROM webhook_deliveries q
    WHERE q.account_id = p_account AND q.subscription_id = p_subscription
      AND q.status = 'Pending' AND q.next_attempt_at <= p_now
      AND EXISTS (SELECT 1 FROM webhook_subscriptions s WHERE s.account_id = p_account AND s.subscription_id = p_subscription
                  AND s.max_per_second IS NULL AND (s.next_send_at IS NULL OR s.next_send_at <= p_now))
    ORDER BY q.next_attempt_at
    LIMIT 1
    FOR UPDATE SKIP LOCKED
)
UPDATE webhook_deliveries d
SET next_attempt_at = p_lease_until, leased_until = p_lease_until
FROM due, webhook_events e, webhook_subscriptions s
WHERE d.account_id = due.account_id AND d.delivery_id = due.delivery_id
  AND e.account_id = d.account_id AND e.event_id = d.event_id
  AND s.account_id = d.account_id AND s.subscription_id = d.subscription_id
RETURNING d.account_id, d.delivery_id, d.status, d.attempts, d.subscription_id, e.event_id, e.event_type,
    e.payload::text AS payload, s.url, s.secret, s.secret_sealed, s.previous_secret_sealed, s.previous_secret_until,
    s.status AS subscription_status,
    (SELECT a.client_secret_sealed FROM accounts a WHERE a.account_id = d.account_id) AS client_secret_sealed;
END
$$;
-- +goose StatementEnd
