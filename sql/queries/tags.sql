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

-- name: TagsSwapMany :batchmany
-- An account's tag changes of a group in one statement (contact.swapTagsOf sends one per
-- account, in one pipeline), each a compare-and-swap: it sets a contact's tags only if they
-- are still the ones the change was computed from, and records the change's events (TagsAdded,
-- TagsRemoved) and the deliveries the fan-out planned for them, only while the account's
-- subscriptions are at the change's plan's version and its segments at the change's (-1: the
-- caller's transaction keeps them; the account is locked shared until commit, as
-- ContactCreate checks it). In an account with dynamic segments the compare is of the whole
-- row (@row_versions, TagsGetForSegments' xmin: the segments were evaluated on all of it), and
-- the contact enters and leaves segments, whose events are among the change's. Each column
-- comes as an array with an element per change (a change's tags are its slice of @tags,
-- tag_from and tag_count, as ContactCreateMany's); events and segments have arrays of their
-- own, each element naming its change by position (1-based, the order of @contact_ids). No
-- two changes may be of one contact (one UPDATE changes a row once), and they come in contact
-- order, the order the UPDATE locks them in (a nested loop over @contact_ids), so that two
-- groups never wait on each other both ways. Returns a row per change, in their order: its
-- contact's id if it swapped (uuid.Nil otherwise: the tags changed since they were read), and
-- whether its plan and its segments were current.
WITH input AS (
    SELECT unnest(@contact_ids::uuid[]) AS contact_id,
           unnest(@tag_from::integer[]) AS tag_from,
           unnest(@tag_count::integer[]) AS tag_count,
           unnest(@previous_from::integer[]) AS previous_from,
           unnest(@previous_count::integer[]) AS previous_count,
           unnest(@row_versions::bigint[]) AS row_version,
           unnest(@subscriptions_versions::bigint[]) AS subscriptions_version,
           unnest(@segments_versions::bigint[]) AS segments_version,
           unnest(@updated_ats::timestamptz[]) AS updated_at,
           generate_subscripts(@contact_ids::uuid[], 1) AS position
), account AS MATERIALIZED (
    SELECT a.account_id, a.subscriptions_version, a.segments_version FROM accounts a
    WHERE a.account_id = @account_id::uuid
    FOR SHARE
), checked AS MATERIALIZED (
    SELECT i.*, coalesce(a.subscriptions_version = i.subscriptions_version, false) AS current,
           coalesce(i.segments_version < 0 OR a.segments_version = i.segments_version, false) AS segments_current
    FROM input i LEFT JOIN account a ON true
), swapped AS (
    UPDATE contacts c SET tags = (@tags::text[])[k.tag_from + 1 : k.tag_from + k.tag_count], updated_at = k.updated_at
    FROM checked k
    WHERE c.account_id = @account_id::uuid AND c.contact_id = ANY(@contact_ids::uuid[]) AND c.contact_id = k.contact_id
      AND k.current AND k.segments_current
      AND CASE WHEN k.row_version < 0 THEN c.tags = (@previous::text[])[k.previous_from + 1 : k.previous_from + k.previous_count]
               ELSE c.xmin::text::bigint = k.row_version END
    RETURNING k.position, c.account_id, c.contact_id, c.updated_at
), entered AS (
    INSERT INTO segment_members (account_id, segment_id, contact_id, added_at)
    SELECT s.account_id, e.segment_id, s.contact_id, s.updated_at
    FROM swapped s JOIN (SELECT unnest(@entered_changes::integer[]) AS position, unnest(@entered_segment_ids::uuid[]) AS segment_id) e
        ON e.position = s.position
    ON CONFLICT DO NOTHING
), gone AS (
    DELETE FROM segment_members m
    USING swapped s, (SELECT unnest(@left_changes::integer[]) AS position, unnest(@left_segment_ids::uuid[]) AS segment_id) l
    WHERE l.position = s.position AND m.account_id = s.account_id AND m.contact_id = s.contact_id AND m.segment_id = l.segment_id
), recorded AS MATERIALIZED (
    -- the swapped changes' events and their planned deliveries (migration 00055)
    SELECT record_events(@account_id::uuid, array_agg(e.event_id), array_agg(e.event_type), array_agg(s.contact_id),
               array_agg(e.payload), array_agg(s.updated_at), array_agg(e.trace), false,
               NULL, @delivery_event_ids::uuid[], @delivery_subscription_ids::uuid[], NULL, NULL, false) AS events
    FROM swapped s
    JOIN (SELECT unnest(@event_changes::integer[]) AS position, unnest(@event_ids::uuid[]) AS event_id,
                 unnest(@event_types::text[]) AS event_type, unnest(@event_payloads::text[]) AS payload,
                 unnest(@event_traces::text[]) AS trace) e ON e.position = s.position
)
SELECT coalesce(s.contact_id, '00000000-0000-0000-0000-000000000000'::uuid)::uuid AS contact_id,
       k.current::boolean AS current, k.segments_current::boolean AS segments_current,
       (SELECT events FROM recorded)::integer AS events_recorded
FROM checked k LEFT JOIN swapped s ON s.position = k.position
ORDER BY k.position;
