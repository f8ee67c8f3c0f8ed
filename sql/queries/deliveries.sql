-- The claims. The dispatcher's claim (DeliveryClaim) counts the attempts each receiver holds
-- (its leases) and takes what room is left, so two of them must not count at once: each takes
-- an advisory lock first, in the statement before it (DeliveryClaimLock), and the store sends
-- them in one round trip and one implicit transaction (store.Pipelined), so the claim's
-- snapshot is taken after the lock is held and sees every lease the claims before it
-- committed. A worker's claim (DeliverySucceedMany with claim_next) swaps the lease of the
-- delivery it just delivered for at most one of the same receiver, in the statement that
-- records the success: any other claim counts either the old lease or the new one, never
-- both and never neither, so it never adds to what a dispatcher's claim counted, and takes no
-- lock. It goes on only while that holds: its lease is live (delivery.Service.attempt: one that
-- outlived its lease may have been counted as gone), the subscription still has the URL its
-- lease was counted under, and no failure has cut the receiver's room to one attempt.
-- The previous release's workers take the dispatcher's lock shared and count the receiver's
-- leases under it; its dispatcher takes it exclusively, as this one does: both releases'
-- dispatchers exclude each other during a rollout, and each one's workers only swap.
-- Both claims commit without waiting for the WAL flush (synchronous_commit off: see
-- DeliverySucceedMany). The queue's rows churn faster than autovacuum's analyze follows, so the
-- planner's statistics are routinely wrong about it; the claims therefore pin their plans for
-- their transaction (DeliveryClaimSettings, the first statement of each):
-- - enable_seqscan off: on statistics taken when the table was small, the planner read the
--   whole table for a few leases; every part of a claim has an index to go by;
-- - enable_bitmapscan off: a bitmap scan of webhook_deliveries_leases visits the heap for
--   every lease ended since the last vacuum (thousands a second) and never marks their index
--   entries dead; an index scan marks them, so the next claim skips them;
-- - enable_sort off: the pending index keeps the pages of every delivery sent since it grew,
--   so each live entry looks dear, and the planner took a subscription's oldest due deliveries
--   from its whole history and sorted them; the sorts no plan can spare (the dispatcher's
--   rankings) are in every plan alike;
-- - jit off: each path ruled out costs a plan 10^10, past jit_above_cost, and JIT would
--   compile the claim on every call;
-- - plan_cache_mode force_generic_plan: left to choose, PostgreSQL re-planned a worker's claim
--   for its values often enough to cost more than running it.
-- Both read the event through delivery_event (migration 00038), which PostgreSQL prunes to
-- the event's day before it starts: a generic plan joining the partitioned events by the
-- claimed event's id would start a scan of every day kept.

-- name: DeliveryClaimSettings :exec
-- The claims' settings for their transaction (above), sent before them in one round trip.
SELECT set_config('synchronous_commit', 'off', true), set_config('enable_seqscan', 'off', true),
    set_config('enable_bitmapscan', 'off', true), set_config('enable_sort', 'off', true),
    set_config('jit', 'off', true), set_config('plan_cache_mode', 'force_generic_plan', true);

-- name: DeliveryClaimLock :exec
-- The dispatcher's claims, one at a time in every process. The key is the one every release
-- has taken (migration 00012's functions first).
SELECT pg_advisory_xact_lock(hashtextextended('contactd.claim_deliveries', 0));


-- name: DeliveryClaim :many
-- Leases up to @max due deliveries to the dispatcher, after DeliveryClaimLock: each receiver
-- (URL) gets at most its room (@max_in_flight attempts at once, one for a receiver that has
-- not succeeded yet or whose last attempt failed), a throttled subscription at most
-- @throttle_share of its second's worth, and the free workers go first to the accounts
-- holding the fewest attempts (a busy account's backlog queues behind itself).
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
), leased AS MATERIALIZED (
    -- the leases held now, read once (webhook_deliveries_leases): a plan probing each
    -- subscription's deliveries for its leases read their whole history
    SELECT l.account_id, l.subscription_id FROM webhook_deliveries l WHERE l.leased_until > @now::timestamptz
), held AS (
    SELECT s.url, count(*) AS n
    FROM leased l
    JOIN webhook_subscriptions s ON s.account_id = l.account_id AND s.subscription_id = l.subscription_id
    GROUP BY s.url
), open AS (
    -- those free to send now: their receiver below its limit, not held back (a hanging
    -- receiver holds one worker, not @max_in_flight)
    SELECT s.account_id, s.subscription_id, s.url, s.max_per_second, l.lim,
           l.lim - coalesce(h.n, 0) AS room
    FROM pending p
    JOIN webhook_subscriptions s ON s.account_id = p.account_id AND s.subscription_id = p.subscription_id
    CROSS JOIN LATERAL (SELECT CASE WHEN s.consecutive_failures > 0 OR s.last_success_at IS NULL THEN 1
                                    ELSE @max_in_flight::int END AS lim) l
    LEFT JOIN held h ON h.url = s.url
    WHERE coalesce(h.n, 0) < l.lim AND (s.next_send_at IS NULL OR s.next_send_at <= @now::timestamptz)
), candidate AS (
    -- each open subscription's oldest due deliveries, at most its receiver's room
    SELECT q.account_id, q.delivery_id, q.event_id, q.subscription_id, q.next_attempt_at, o.url, o.max_per_second, o.lim
    FROM open o, LATERAL (
        SELECT d.account_id, d.delivery_id, d.event_id, d.subscription_id, d.next_attempt_at FROM webhook_deliveries d
        WHERE d.account_id = o.account_id AND d.subscription_id = o.subscription_id
          AND d.status = 'Pending' AND d.next_attempt_at <= @now::timestamptz
        ORDER BY d.next_attempt_at
        LIMIT o.room
        FOR UPDATE SKIP LOCKED) q
), held_by_account AS (
    SELECT l.account_id, count(*) AS n FROM leased l GROUP BY l.account_id
), due AS (
    -- an account's first candidate ranks its leases + 1, its second + 2...; the oldest due
    -- first among equals
    SELECT y.account_id, y.delivery_id, y.event_id, y.subscription_id, y.max_per_second, y.next_attempt_at
    FROM (
        SELECT x.*, row_number() OVER (PARTITION BY x.account_id ORDER BY x.next_attempt_at, x.delivery_id) AS by_account
        FROM (
            SELECT c.account_id, c.delivery_id, c.event_id, c.subscription_id, c.next_attempt_at, c.max_per_second, c.lim,
                   coalesce(h.n, 0) AS held_n,
                   row_number() OVER (PARTITION BY c.url ORDER BY c.next_attempt_at, c.delivery_id) AS by_url,
                   row_number() OVER (PARTITION BY c.account_id, c.subscription_id ORDER BY c.next_attempt_at, c.delivery_id) AS by_sub
            FROM candidate c LEFT JOIN held h ON h.url = c.url
        ) x
        WHERE x.by_url <= x.lim - x.held_n
          AND (x.max_per_second IS NULL OR x.by_sub <= greatest(1, floor(x.max_per_second * @throttle_share::float8)))
    ) y
    LEFT JOIN held_by_account ha ON ha.account_id = y.account_id
    ORDER BY coalesce(ha.n, 0) + y.by_account, y.next_attempt_at
    LIMIT @max::int
), paced AS (
    UPDATE webhook_subscriptions s
    SET next_send_at = t.n * interval '1 second' / s.max_per_second + @now::timestamptz
    FROM (SELECT account_id, subscription_id, count(*) AS n FROM due WHERE max_per_second IS NOT NULL GROUP BY 1, 2) t
    WHERE s.account_id = t.account_id AND s.subscription_id = t.subscription_id
)
UPDATE webhook_deliveries d
SET next_attempt_at = @lease_until::timestamptz, leased_until = @lease_until::timestamptz
FROM due CROSS JOIN LATERAL delivery_event(due.account_id, due.event_id) AS e (event_type, payload), webhook_subscriptions s
WHERE d.account_id = due.account_id AND d.delivery_id = due.delivery_id
  AND s.account_id = d.account_id AND s.subscription_id = d.subscription_id
RETURNING d.account_id, d.delivery_id, d.status, d.attempts, d.subscription_id, d.event_id, e.event_type::text AS event_type,
    e.payload::text AS payload, s.url, s.secret, s.secret_sealed, s.previous_secret_sealed, s.previous_secret_until,
    s.status AS subscription_status,
    (SELECT a.client_secret_sealed FROM accounts a WHERE a.account_id = d.account_id) AS client_secret_sealed,
    due.next_attempt_at AS due_at;

-- name: DeliverySucceedMany :batchmany
-- An account's successful attempts of a group in one statement (delivery.SendSuccesses sends
-- one per account, in one pipeline): each attempt recorded, its delivery Succeeded, its
-- subscription healthy again; and for each success with claim_next, the worker's claim of its
-- subscription's oldest due delivery not claimed by another worker of the group (see the
-- claims above), which it returns with the success's position (1-based, the order of
-- @delivery_ids). The subscription row is written only when a success changes something, so
-- workers delivering to one subscription do not line up on its row lock; last_success_at,
-- read only by the sweep of Failing subscriptions five days on, is refreshed when older than a
-- minute. The attempt is inserted from the delivery's updated row, and the rest done only with
-- it: nothing is recorded or claimed for a delivery that is gone (webhook_attempts has no
-- foreign key: migration 00039).
-- It commits without waiting for its WAL to reach the disk (synchronous_commit off, set by
-- DeliveryClaimSettings before it): a crash of PostgreSQL can lose the last fraction of a
-- second of these records, and the delivery is then made again: the at-least-once promise,
-- which receivers meet with the webhook-id. The changes that create events and deliveries
-- still wait for the flush, and so does the record of a failure.
-- A worker holds a database connection while it waits for a row lock (the subscription's,
-- written by the API or a dispatcher's pacing), so the wait is bounded (lock_timeout, set
-- first); each success is then recorded again alone.
WITH bounded AS MATERIALIZED (
    SELECT set_config('lock_timeout', '1s', true)
), input AS (
    SELECT unnest(@delivery_ids::uuid[]) AS delivery_id,
           unnest(@attempts::integer[]) AS attempt,
           nullif(unnest(@response_statuses::integer[]), 0) AS response_status, -- 0: none
           unnest(@latencies_ms::integer[]) AS latency_ms,
           unnest(@response_excerpts::varchar[]) AS response_excerpt,
           unnest(@attempted_at::timestamptz[]) AS now,
           unnest(@claim_next::boolean[]) AS claim_next,
           unnest(@urls::text[]) AS url,
           unnest(@lease_until::timestamptz[]) AS lease_until,
           unnest(@due_from::timestamptz[]) AS due_from,
           generate_subscripts(@delivery_ids::uuid[], 1) AS position
), located AS (
    -- each delivery's row by its key, one probe each, and the rows then by where they are:
    -- the plan is kept (generic) and may have been made when the queue was small, and a join
    -- of the ids with the queue let it read all of it. (sqlc cannot name ctid here, and does
    -- not look inside an array.)
    SELECT i.*, @account_id::uuid AS account_id,
           (ARRAY(SELECT ctid FROM webhook_deliveries WHERE account_id = @account_id::uuid AND delivery_id = i.delivery_id))[1] AS row
    FROM input i
), delivery AS (
    UPDATE webhook_deliveries d
    SET attempts = i.attempt, status = 'Succeeded', next_attempt_at = NULL, updated_at = i.now, leased_until = NULL
    FROM located i
    -- a condition on no row: PostgreSQL evaluates it first, before it reads any row
    WHERE EXISTS (SELECT FROM bounded) AND d.ctid = ANY(ARRAY(SELECT row FROM located)) AND d.ctid = i.row
      AND d.account_id = i.account_id AND d.delivery_id = i.delivery_id
    RETURNING i.position, d.delivery_id, d.subscription_id, d.event_id, i.attempt, i.response_status, i.latency_ms,
        i.response_excerpt, i.now, i.claim_next, i.url, i.lease_until, i.due_from
), attempt AS (
    INSERT INTO webhook_attempts (
        account_id, delivery_id, attempt, attempted_at, response_status, latency_ms, response_excerpt, subscription_id, event_id
    ) SELECT @account_id::uuid, delivery_id, attempt, now, response_status, latency_ms, response_excerpt, subscription_id, event_id
    FROM delivery
    ON CONFLICT (account_id, delivery_id, attempt) DO NOTHING
), healthy AS (
    UPDATE webhook_subscriptions s
    SET consecutive_failures = 0, last_success_at = h.now, failing_since = NULL,
        status = CASE WHEN s.status = 'Failing' THEN 'Active' ELSE s.status END,
        updated_at = CASE WHEN s.status = 'Failing' THEN h.now ELSE s.updated_at END
    FROM (SELECT subscription_id, max(now) AS now FROM delivery GROUP BY subscription_id) h
    WHERE s.account_id = @account_id::uuid AND s.subscription_id = h.subscription_id AND s.status <> 'Removed'
      AND (s.consecutive_failures <> 0 OR s.status = 'Failing' OR s.last_success_at IS NULL
           OR s.last_success_at < h.now - interval '1 minute')
), claimer AS (
    -- the workers that go on, numbered within their subscription: while it may go on, its URL
    -- the one the lease was counted under, not throttled or held back, its receiver's room not
    -- cut to one attempt (a failure, or no success yet: the dispatcher decides then)
    SELECT d.position, d.subscription_id, d.lease_until, d.now, d.due_from, s.url, s.secret, s.secret_sealed,
           s.previous_secret_sealed, s.previous_secret_until, s.status AS subscription_status,
           row_number() OVER (PARTITION BY d.subscription_id ORDER BY d.position) AS n
    FROM delivery d JOIN webhook_subscriptions s ON s.account_id = @account_id::uuid AND s.subscription_id = d.subscription_id
    WHERE d.claim_next AND s.url = d.url AND s.max_per_second IS NULL AND (s.next_send_at IS NULL OR s.next_send_at <= d.now)
      AND s.consecutive_failures = 0 AND s.last_success_at IS NOT NULL
), due AS (
    -- each such subscription's oldest due deliveries, one for each of its workers, from the
    -- earliest of their due_from on (it spares the walk over the index entries of the
    -- deliveries made since the last vacuum: delivery.nextLook)
    SELECT c.subscription_id, q.row, q.account_id, q.delivery_id, q.event_id, q.next_attempt_at,
           row_number() OVER (PARTITION BY c.subscription_id ORDER BY q.next_attempt_at, q.delivery_id) AS n
    FROM (SELECT subscription_id, count(*) AS workers, min(now) AS now, min(due_from) AS due_from
          FROM claimer GROUP BY subscription_id) c,
    LATERAL (
        SELECT (ARRAY[ctid])[1] AS row, q.account_id, q.delivery_id, q.event_id, q.next_attempt_at FROM webhook_deliveries q
        WHERE q.account_id = @account_id::uuid AND q.subscription_id = c.subscription_id
          AND q.status = 'Pending' AND q.next_attempt_at <= c.now AND q.next_attempt_at >= c.due_from
        ORDER BY q.next_attempt_at
        LIMIT c.workers
        FOR UPDATE SKIP LOCKED) q
)
UPDATE webhook_deliveries d
SET next_attempt_at = c.lease_until, leased_until = c.lease_until
FROM due JOIN claimer c ON c.subscription_id = due.subscription_id AND c.n = due.n
    CROSS JOIN LATERAL delivery_event(@account_id::uuid, due.event_id) AS e (event_type, payload)
-- the rows the claim locked, by where they are (they cannot move while locked): no other path
-- to them is left to the kept plan
WHERE d.ctid = ANY(ARRAY(SELECT row FROM due)) AND d.ctid = due.row AND d.account_id = due.account_id
RETURNING c.position::integer AS position, d.account_id, d.delivery_id, d.status, d.attempts, d.subscription_id, d.event_id,
    e.event_type::text AS event_type, e.payload::text AS payload, c.url, c.secret, c.secret_sealed, c.previous_secret_sealed,
    c.previous_secret_until, c.subscription_status,
    (SELECT a.client_secret_sealed FROM accounts a WHERE a.account_id = d.account_id) AS client_secret_sealed,
    due.next_attempt_at AS due_at;

-- name: DeliveryLoad :one
-- Everything one attempt needs, in one round trip.
SELECT d.status, d.attempts, d.subscription_id, e.event_id, e.event_type, e.payload::text AS payload,
       s.url, s.secret, s.secret_sealed, s.previous_secret_sealed, s.previous_secret_until,
       s.status AS subscription_status,
       (SELECT a.client_secret_sealed FROM accounts a WHERE a.account_id = d.account_id) AS client_secret_sealed
FROM webhook_deliveries d
JOIN webhook_events e ON e.account_id = d.account_id AND e.event_id = d.event_id
JOIN webhook_subscriptions s ON s.account_id = d.account_id AND s.subscription_id = d.subscription_id
WHERE d.account_id = $1 AND d.delivery_id = $2;

-- name: DeliveryRecordAttempt :exec
UPDATE webhook_deliveries
SET attempts = @attempt, status = @status, next_attempt_at = sqlc.narg('next_attempt_at'), updated_at = @now,
    leased_until = NULL
WHERE account_id = @account_id AND delivery_id = @delivery_id;

-- name: AttemptInsert :exec
-- After DeliveryRecordAttempt in the same transaction, which locked the delivery's row: none
-- for a delivery that is gone (webhook_attempts has no foreign key: migration 00039).
INSERT INTO webhook_attempts (
    account_id, delivery_id, attempt, attempted_at, response_status, latency_ms, error, next_attempt_at, response_excerpt,
    subscription_id, event_id
) SELECT d.account_id, d.delivery_id, @attempt, @attempted_at, @response_status, @latency_ms, sqlc.narg('error'),
    sqlc.narg('next_attempt_at'), sqlc.narg('response_excerpt'), d.subscription_id, d.event_id
FROM webhook_deliveries d WHERE d.account_id = @account_id AND d.delivery_id = @delivery_id
ON CONFLICT (account_id, delivery_id, attempt) DO NOTHING;

-- name: AttemptsList :many
-- A page of the subscription's attempts, newest first: the entries of its attempts' index
-- (migration 00041) that the page returns, each with its delivery's event by the delivery's
-- key. Their events' type is the subscription's (a delivery goes only to a subscription of its
-- event's type), so no event is read: a join on the events by their ids would probe each
-- day's partition for each row.
SELECT a.delivery_id, a.attempt, a.attempted_at, a.response_status, a.latency_ms, a.error,
       a.next_attempt_at, d.event_id, s.event_type, a.response_excerpt
FROM webhook_attempts a
JOIN webhook_deliveries d ON d.account_id = a.account_id AND d.delivery_id = a.delivery_id
JOIN webhook_subscriptions s ON s.account_id = a.account_id AND s.subscription_id = a.subscription_id
WHERE a.account_id = @account_id AND a.subscription_id = @subscription_id
  AND (NOT @has_cursor::bool OR (a.attempted_at, a.delivery_id, a.attempt) < (@cursor_at::timestamptz, @cursor_delivery::uuid, @cursor_attempt::int))
ORDER BY a.attempted_at DESC, a.delivery_id DESC, a.attempt DESC
LIMIT @row_limit;

-- name: DeliveryGet :one
SELECT d.*, e.event_type FROM webhook_deliveries d
JOIN webhook_events e ON e.account_id = d.account_id AND e.event_id = d.event_id
WHERE d.account_id = $1 AND d.subscription_id = $2 AND d.delivery_id = $3;

-- name: DeliveryRequeue :exec
UPDATE webhook_deliveries SET status = 'Pending', next_attempt_at = @now, updated_at = @now
WHERE account_id = @account_id AND delivery_id = @delivery_id;

-- name: SubscriptionHoldBack :exec
-- A receiver asked for time (Retry-After on a 429 or 503): the subscription's attempts wait
-- until @until, not only the one that was refused.
UPDATE webhook_subscriptions SET next_send_at = greatest(coalesce(next_send_at, @until::timestamptz), @until::timestamptz)
WHERE account_id = @account_id AND subscription_id = @subscription_id;

-- name: AttemptsForgetResponses :execrows
-- Clears the response excerpts recorded for the deliveries of @event_ids, for an erasure: a
-- receiver may have echoed what it was sent. The attempts that kept one are indexed by their
-- event (migration 00043): this reads the person's, not the account's.
UPDATE webhook_attempts a SET response_excerpt = NULL
WHERE a.account_id = @account_id AND a.event_id = ANY(@event_ids::uuid[]) AND a.response_excerpt IS NOT NULL;

-- name: DeliverySuccesses :one
-- How many of a delivery's attempts succeeded: a NATS message's id counts them, so a retry
-- after an acknowledgement lost is the same message to the stream, and a redelivery by hand
-- after a success a new one.
SELECT count(*)::int FROM webhook_attempts
WHERE account_id = @account_id AND delivery_id = @delivery_id AND error IS NULL
  AND (response_status IS NULL OR response_status BETWEEN 200 AND 299);

-- name: SubscriptionRecordFailure :many
-- Records a failed attempt (@failure: "HTTP 503", or the error) on the subscription; the third
-- failure in a row turns an Active subscription Failing, and then returns its row (to warn
-- the account: SubscriptionFailing).
UPDATE webhook_subscriptions
SET consecutive_failures = consecutive_failures + 1, last_failure_at = @now, last_failure = @failure::text,
    status = CASE WHEN status = 'Active' AND consecutive_failures + 1 >= @failing_after::int THEN 'Failing' ELSE status END,
    failing_since = CASE WHEN status = 'Active' AND consecutive_failures + 1 >= @failing_after::int THEN @now ELSE failing_since END,
    updated_at = CASE WHEN status = 'Active' AND consecutive_failures + 1 >= @failing_after::int THEN @now ELSE updated_at END
WHERE account_id = @account_id AND subscription_id = @subscription_id AND status <> 'Removed'
RETURNING subscription_id, event_type, last_success_at, created_at, consecutive_failures,
    @failure::text AS failure, (status = 'Failing' AND failing_since IS NOT DISTINCT FROM @now)::boolean AS turned_failing;

-- name: SubscriptionsSweepFailing :one
-- Maintenance across accounts: Failing subscriptions without a success since the cutoff
-- are removed, and their accounts' subscriptions_version moves on; how many were removed.
WITH swept AS (
    UPDATE webhook_subscriptions
    SET status = 'Removed', updated_at = @now, removed_reason = 'FailingTooLong'
    WHERE status = 'Failing' AND coalesce(last_success_at, created_at) < @cutoff
    RETURNING account_id
), bumped AS (
    UPDATE accounts SET subscriptions_version = subscriptions_version + 1
    WHERE account_id IN (SELECT account_id FROM swept)
)
SELECT count(*) FROM swept;

-- name: EventsForReplay :many
-- A page of the account's events of @event_type in [@since, @until) after the cursor, in the
-- feed's order: their ids, and their payloads @with_payloads (for a filter to be evaluated on;
-- '' otherwise).
-- @since_id and @until_id bound the events' ids (of their time: a bit wider than the window,
-- see delivery.Replay), so only the partitions of the window's days are read.
SELECT e.event_id, e.xid::text AS position_xid, CASE WHEN @with_payloads::bool THEN e.payload::text ELSE '' END AS payload
FROM webhook_events e
WHERE e.account_id = @account_id AND e.event_type = @event_type
  AND e.occurred_at >= @since::timestamptz AND e.occurred_at < @until::timestamptz AND NOT e.test
  AND e.event_id >= @since_id AND e.event_id < @until_id
  AND (e.xid, e.event_id) > ((@after_xid::text)::xid8, @after_event::uuid)
ORDER BY e.xid, e.event_id
LIMIT @row_limit;

-- name: ReplayRoom :one
-- For a replay's bounds: how many events of the subscription's type occurred in the window
-- (counted up to one more than the bound), and how many of its deliveries are Pending
-- (counted up to the bound). Each count stops at its bound, so it costs at most that many
-- index entries however big the account.
SELECT
    (SELECT count(*)::int FROM (
        SELECT 1 FROM webhook_events e JOIN webhook_subscriptions s
          ON s.account_id = e.account_id AND s.event_type = e.event_type
        WHERE s.account_id = @account_id AND s.subscription_id = @subscription_id
          AND e.occurred_at >= @since::timestamptz AND e.occurred_at < @until::timestamptz AND NOT e.test
          AND e.event_id >= @since_id AND e.event_id < @until_id
        LIMIT @events_limit::int) w) AS events,
    (SELECT count(*)::int FROM (
        SELECT 1 FROM webhook_deliveries d
        WHERE d.account_id = @account_id AND d.subscription_id = @subscription_id AND d.status = 'Pending'
        LIMIT @pending_limit::int) p) AS pending;

-- name: SubscriptionHealth :many
-- The account's subscriptions' attempts over a window: how many, how many succeeded, and
-- their median and 95th-percentile latency.
SELECT d.subscription_id, count(*)::int AS attempts,
       count(*) FILTER (WHERE a.response_status BETWEEN 200 AND 299)::int AS succeeded,
       coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY a.latency_ms), 0)::float8 AS p50_ms,
       coalesce(percentile_cont(0.95) WITHIN GROUP (ORDER BY a.latency_ms), 0)::float8 AS p95_ms
FROM webhook_attempts a
JOIN webhook_deliveries d ON d.account_id = a.account_id AND d.delivery_id = a.delivery_id
WHERE a.account_id = $1 AND a.attempted_at >= $2
GROUP BY d.subscription_id;

-- name: EventTrace :one
-- The traceparent an event's delivery attempt continues (tracing on only).
SELECT trace FROM webhook_events WHERE account_id = @account_id AND event_id = @event_id;
