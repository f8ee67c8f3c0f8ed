-- +goose Up
-- Delivery isolation: one slow or hanging receiver may hold at most a few attempts at once
-- (the claim counts the leases it holds), and a subscription may be throttled.
-- leased_until is set while a worker makes the delivery's attempt (the end of its lease) and
-- cleared when the attempt is recorded; a worker that died leaves it to expire. The leases
-- held now are few (at most the workers of every process), so counting them per subscription
-- on each claim is cheap.
ALTER TABLE webhook_deliveries ADD COLUMN leased_until timestamptz;
CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (leased_until) WHERE leased_until IS NOT NULL;
-- a subscription's Pending deliveries, oldest due first: the claim visits each subscription
-- with pending work (a skip scan) and takes its oldest due ones.
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (account_id, subscription_id, next_attempt_at)
    WHERE status = 'Pending';
-- max_per_second throttles the subscription's attempts (NULL: as fast as they come);
-- next_send_at holds them back until then: the throttle's pace, or a receiver's Retry-After.
ALTER TABLE webhook_subscriptions
    ADD COLUMN max_per_second integer CHECK (max_per_second BETWEEN 1 AND 1000),
    ADD COLUMN next_send_at timestamptz;

-- claim_deliveries is the delivery queue's claim (the query DeliveryClaim calls it; a function
-- because sqlc cannot analyse its statement, PL/pgSQL because it keeps its plan for the
-- session where a SQL function would plan its body on every call, a millisecond each):
-- Leases up to @max due deliveries to the caller until @lease_until, with everything their
-- attempts need; SKIP LOCKED lets workers in several processes claim side by side. A lease
-- that ends without a recorded attempt (the worker died) makes the delivery due again, for
-- the same attempt.
-- Isolation: a receiver (a URL) holds at most @max_in_flight leases at once across every
-- process, so a slow or hanging one delays only its own deliveries: the claim visits each
-- subscription with pending deliveries (its cost follows the subscriptions, not their
-- backlogs), skips those whose receiver is at that limit, and takes at most the room left of
-- the others, the oldest first. A throttled subscription (max_per_second) gets at most
-- @throttle_share of a second's worth per claim and is held back (next_send_at) until that
-- much time has passed; a subscription held back by a receiver's Retry-After waits too.
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
), due AS (
    SELECT x.account_id, x.delivery_id, x.subscription_id, x.max_per_second
    FROM (
        SELECT c.account_id, c.delivery_id, c.subscription_id, c.next_attempt_at, c.max_per_second, c.lim,
               coalesce(h.n, 0) AS held_n,
               row_number() OVER (PARTITION BY c.url ORDER BY c.next_attempt_at, c.delivery_id) AS by_url,
               row_number() OVER (PARTITION BY c.account_id, c.subscription_id ORDER BY c.next_attempt_at, c.delivery_id) AS by_sub
        FROM candidate c LEFT JOIN held h ON h.url = c.url
    ) x
    WHERE x.by_url <= x.lim - x.held_n
      AND (x.max_per_second IS NULL OR x.by_sub <= greatest(1, floor(x.max_per_second * p_throttle_share)))
    ORDER BY x.next_attempt_at
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

-- claim_next_delivery leases the oldest due delivery of one subscription, for the worker that
-- just finished one of its attempts (the receiver's room it frees goes to the same receiver at
-- once, without a round through the dispatcher); none when the subscription is throttled or
-- held back.
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

-- +goose Down
DROP FUNCTION claim_next_delivery(uuid, uuid, timestamptz, timestamptz);
DROP INDEX webhook_deliveries_pending;
DROP FUNCTION claim_deliveries(timestamptz, timestamptz, int, int, float8);
ALTER TABLE webhook_subscriptions DROP COLUMN next_send_at, DROP COLUMN max_per_second;
DROP INDEX webhook_deliveries_leased;
ALTER TABLE webhook_deliveries DROP COLUMN leased_until;
