-- +goose Up
-- The delivery claims became statements of their own (DeliveryClaim, DeliveryClaimNext; they
-- take the locks these functions took): neither this release nor the previous one calls these
-- functions, so they go (the rolling-upgrade rule: a release drops only what the previous one
-- does not use).
DROP FUNCTION claim_deliveries(timestamptz, timestamptz, int, int, float8);
DROP FUNCTION claim_deliveries_alone(timestamptz, timestamptz, int, int, float8);
DROP FUNCTION claim_next_delivery(uuid, uuid, timestamptz, timestamptz, int);

-- +goose Down
-- As migrations 00022 and 00023 left them.
-- +goose StatementBegin
CREATE FUNCTION claim_deliveries(p_now timestamptz, p_lease_until timestamptz, p_max int,
    p_max_in_flight int, p_throttle_share float8)
RETURNS TABLE (account_id uuid, delivery_id uuid, status text, attempts int, subscription_id uuid,
    event_id uuid, event_type text, payload text, url text, secret text, secret_sealed text,
    previous_secret_sealed text, previous_secret_until timestamptz, subscription_status text,
    client_secret_sealed text)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
BEGIN
RETURN QUERY
WITH RECURSIVE pending AS (
    -- the subscriptions with Pending deliveries, one index probe each (a skip scan of
    -- webhook_deliveries_pending): the cost follows the subscriptions, not their backlogs
    (SELECT q.account_id, q.subscription_id FROM webhook_deliveries q
     WHERE q.status = 'Pending' ORDER BY q.account_id, q.subscription_id LIMIT 1)
    UNION ALL
    SELECT nx.account_id, nx.subscription_id FROM pending p, LATERAL (
        SELECT q.account_id, q.subscription_id FROM webhook_deliveries q
        WHERE q.status = 'Pending' AND (q.account_id, q.subscription_id) > (p.account_id, p.subscription_id)
        ORDER BY q.account_id, q.subscription_id LIMIT 1) nx
), held AS (
    SELECT s.url, count(*) AS n
    FROM webhook_deliveries l
    JOIN webhook_subscriptions s ON s.account_id = l.account_id AND s.subscription_id = l.subscription_id
    WHERE l.leased_until > p_now
    GROUP BY s.url
), open AS (
    -- those free to send now: their receiver below its limit, not held back
    -- (a receiver that has not succeeded yet, or whose last attempt failed, gets one attempt
    -- at a time until one succeeds: hanging receivers hold one worker each, not
    -- p_max_in_flight)
    SELECT s.account_id, s.subscription_id, s.url, s.max_per_second, l.lim,
           l.lim - coalesce(h.n, 0) AS room
    FROM pending p
    JOIN webhook_subscriptions s ON s.account_id = p.account_id AND s.subscription_id = p.subscription_id
    CROSS JOIN LATERAL (SELECT CASE WHEN s.consecutive_failures > 0 OR s.last_success_at IS NULL THEN 1 ELSE p_max_in_flight END AS lim) l
    LEFT JOIN held h ON h.url = s.url
    WHERE coalesce(h.n, 0) < l.lim AND (s.next_send_at IS NULL OR s.next_send_at <= p_now)
), candidate AS (
    -- each open subscription's oldest due deliveries, at most its receiver's room
    SELECT q.account_id, q.delivery_id, q.subscription_id, q.next_attempt_at, o.url, o.max_per_second, o.lim
    FROM open o, LATERAL (
        SELECT d.account_id, d.delivery_id, d.subscription_id, d.next_attempt_at FROM webhook_deliveries d
        WHERE d.account_id = o.account_id AND d.subscription_id = o.subscription_id
          AND d.status = 'Pending' AND d.next_attempt_at <= p_now
        ORDER BY d.next_attempt_at
        LIMIT o.room
        FOR UPDATE SKIP LOCKED) q
), held_by_account AS (
    SELECT l.account_id, count(*) AS n FROM webhook_deliveries l WHERE l.leased_until > p_now GROUP BY l.account_id
), due AS (
    -- the free workers go to the accounts holding the fewest attempts, counting the ones this
    -- claim gives them (an account's first candidate ranks its leases + 1, its second + 2...),
    -- the oldest due first among equals: a busy account's backlog queues behind itself
    SELECT y.account_id, y.delivery_id, y.subscription_id, y.max_per_second
    FROM (
        SELECT x.*, row_number() OVER (PARTITION BY x.account_id ORDER BY x.next_attempt_at, x.delivery_id) AS by_account
        FROM (
            SELECT c.account_id, c.delivery_id, c.subscription_id, c.next_attempt_at, c.max_per_second, c.lim,
                   coalesce(h.n, 0) AS held_n,
                   row_number() OVER (PARTITION BY c.url ORDER BY c.next_attempt_at, c.delivery_id) AS by_url,
                   row_number() OVER (PARTITION BY c.account_id, c.subscription_id ORDER BY c.next_attempt_at, c.delivery_id) AS by_sub
            FROM candidate c LEFT JOIN held h ON h.url = c.url
        ) x
        WHERE x.by_url <= x.lim - x.held_n
          AND (x.max_per_second IS NULL OR x.by_sub <= greatest(1, floor(x.max_per_second * p_throttle_share)))
    ) y
    LEFT JOIN held_by_account ha ON ha.account_id = y.account_id
    ORDER BY coalesce(ha.n, 0) + y.by_account, y.next_attempt_at
    LIMIT p_max
), paced AS (
    UPDATE webhook_subscriptions s
    SET next_send_at = t.n * interval '1 second' / s.max_per_second + p_now
    FROM (SELECT account_id, subscription_id, count(*) AS n FROM due WHERE max_per_second IS NOT NULL GROUP BY 1, 2) t
    WHERE s.account_id = t.account_id AND s.subscription_id = t.subscription_id
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
