-- name: TagsSet :exec
UPDATE contacts SET tags = $3, updated_at = $4
WHERE account_id = $1 AND contact_id = $2;

-- name: TagsGet :batchone
SELECT tags, email, assigned_user_email_id FROM contacts WHERE account_id = $1 AND contact_id = $2;

-- name: TagsGetForSegments :one
-- A tag change's read in an account with dynamic segments: the whole contact (its filters read
-- any of it), the version of its row (xmin: any write to the contact changes it), and the
-- segments it is in.
SELECT sqlc.embed(r),
       (SELECT c.xmin::text::bigint FROM contacts c WHERE c.account_id = r.account_id AND c.contact_id = r.contact_id) AS row_version,
       ARRAY(SELECT m.segment_id FROM segment_members m WHERE m.account_id = r.account_id AND m.contact_id = r.contact_id)::uuid[] AS segment_ids
FROM contact_rows r WHERE r.account_id = $1 AND r.contact_id = $2;

-- name: TagsSwap :batchone
-- Compare-and-swap: sets the tags only if they are still the ones the change was computed
-- from (contact_id uuid.Nil otherwise), and records the change's events (TagsAdded, TagsRemoved)
-- with it and the deliveries the fan-out planned for them, only while the account's
-- subscriptions are at the plan's @subscriptions_version (current false otherwise: nothing
-- written), and its segments at @segments_version (as ContactCreate checks it; -1: the
-- caller's transaction keeps them). In an account with dynamic segments the compare is of the
-- whole row (@row_version, TagsGetForSegments' xmin: the segments were evaluated on all of
-- it), and the contact enters @segments_entered and leaves @segments_left, whose events are
-- among the change's: a tag change needs no transaction and no lock, and goes to PostgreSQL with the
-- other swaps in flight.
WITH current AS (
    SELECT 1 FROM accounts a WHERE a.account_id = @account_id::uuid AND a.subscriptions_version = @subscriptions_version::bigint
), segments_current AS (
    SELECT 1 FROM accounts a WHERE a.account_id = @account_id::uuid
        AND (@segments_version::bigint < 0 OR a.segments_version = @segments_version::bigint)
    FOR SHARE
), swapped AS (
    UPDATE contacts c SET tags = @tags, updated_at = @updated_at
    WHERE c.account_id = @account_id AND c.contact_id = @contact_id
      AND CASE WHEN @row_version::bigint < 0 THEN c.tags = @previous::text[] ELSE c.xmin::text::bigint = @row_version END
      AND EXISTS (SELECT 1 FROM current) AND EXISTS (SELECT 1 FROM segments_current)
    RETURNING c.account_id, c.contact_id
), entered AS (
    INSERT INTO segment_members (account_id, segment_id, contact_id, added_at)
    SELECT s.account_id, e.segment_id, s.contact_id, @updated_at
    FROM swapped s, unnest(@segments_entered::uuid[]) AS e(segment_id)
    ON CONFLICT DO NOTHING
), gone AS (
    DELETE FROM segment_members m USING swapped s
    WHERE m.account_id = s.account_id AND m.contact_id = s.contact_id AND m.segment_id = ANY(@segments_left::uuid[])
), events AS (
    INSERT INTO webhook_events (account_id, event_id, event_type, contact_id, payload, occurred_at, trace)
    SELECT s.account_id, unnest(@event_ids::uuid[]), unnest(@event_types::text[]), s.contact_id,
           unnest(@event_payloads::text[])::json, @updated_at, nullif(unnest(@event_traces::text[]), '')
    FROM swapped s
    RETURNING account_id, event_id, occurred_at
), delivery AS (
    INSERT INTO webhook_deliveries (account_id, delivery_id, subscription_id, event_id, next_attempt_at, created_at, updated_at)
    SELECT e.account_id, uuid_v7(e.occurred_at), d.subscription_id, e.event_id, e.occurred_at, e.occurred_at, e.occurred_at
    FROM (SELECT unnest(@delivery_event_ids::uuid[]) AS event_id, unnest(@delivery_subscription_ids::uuid[]) AS subscription_id) d
    JOIN events e ON e.event_id = d.event_id
)
SELECT coalesce((SELECT contact_id FROM swapped), '00000000-0000-0000-0000-000000000000'::uuid)::uuid AS contact_id,
       EXISTS (SELECT 1 FROM current) AS current,
       EXISTS (SELECT 1 FROM segments_current) AS segments_current;
