-- Segments (internal/segment): an account's saved filters of its contacts.

-- name: SegmentsLock :exec
-- One segment of the account is created at a time, so that the limit is counted by one
-- writer.
SELECT pg_advisory_xact_lock(hashtextextended('contactd.segments/' || (sqlc.arg('account_id')::uuid)::text, 0));

-- name: SegmentsCount :one
SELECT count(*) FROM segments WHERE account_id = $1;

-- name: SegmentInsert :many
-- Nothing when the account has a segment of that name (in any case).
INSERT INTO segments (account_id, segment_id, name, kind, filter, price, created_at, updated_at)
VALUES (@account_id, @segment_id, @name, @kind, @filter, @price, @now, @now)
ON CONFLICT (account_id, lower(name)) DO NOTHING
RETURNING *;

-- name: SegmentsPriced :one
-- The prices of the account's dynamic segments but @segment_id, added, and how many of them
-- have none (saved before prices were).
SELECT coalesce(sum(price), 0)::bigint AS priced, count(*) FILTER (WHERE price IS NULL) AS unpriced
FROM segments WHERE account_id = @account_id AND kind = 'dynamic' AND segment_id <> @segment_id;

-- name: SegmentsUnpriced :many
SELECT segment_id, filter FROM segments WHERE account_id = $1 AND kind = 'dynamic' AND price IS NULL;

-- name: SegmentSetPrice :exec
UPDATE segments SET price = $3 WHERE account_id = $1 AND segment_id = $2;

-- name: SegmentList :many
SELECT * FROM segments WHERE account_id = $1 ORDER BY created_at, segment_id;

-- name: SegmentGet :one
SELECT * FROM segments WHERE account_id = $1 AND segment_id = $2;

-- name: SegmentUpdate :many
-- Nothing when another segment of the account has the name (in any case); the segment is
-- then read again by the caller to tell that from a segment that is gone.
-- A new filter starts a new generation of the segment, backfilled from the start.
UPDATE segments s SET name = @name, filter = @filter, updated_at = @now, price = coalesce(sqlc.narg('price')::int, s.price),
    status = CASE WHEN s.filter = @filter::jsonb THEN s.status ELSE 'backfilling' END,
    generation = s.generation + (s.filter <> @filter::jsonb)::int,
    backfill_after = CASE WHEN s.filter = @filter::jsonb THEN s.backfill_after END,
    backfill_evaluated = CASE WHEN s.filter = @filter::jsonb THEN s.backfill_evaluated ELSE 0 END,
    backfill_lease = CASE WHEN s.filter = @filter::jsonb THEN s.backfill_lease END
WHERE s.account_id = @account_id AND s.segment_id = @segment_id
  AND NOT EXISTS (SELECT 1 FROM segments o WHERE o.account_id = @account_id AND lower(o.name) = lower(@name)
                  AND o.segment_id <> @segment_id)
RETURNING *;

-- name: SegmentDelete :execrows
DELETE FROM segments WHERE account_id = $1 AND segment_id = $2;

-- name: SegmentMembersDelete :exec
-- A deleted segment's members (they do not reference it: migration 00050), in its delete's
-- transaction once no write can add one: after the segments version's bump, which waited
-- for the writes that held the old version, and after the segment's row went, which waited
-- for a backfill page and a change by hand that held it.
DELETE FROM segment_members WHERE account_id = $1 AND segment_id = $2;

-- name: SegmentGetForMember :one
-- A segment a member is added to or removed from by hand, held against its delete until the
-- change commits.
SELECT * FROM segments WHERE account_id = $1 AND segment_id = $2 FOR KEY SHARE;

-- name: SegmentsVersionBump :exec
-- In the transaction of every change of a segment (SegmentsDynamic's version).
UPDATE accounts SET segments_version = segments_version + 1 WHERE account_id = $1;

-- name: SegmentsDynamic :one
-- The account's dynamic segments in the order they were saved, at the version they are: one
-- statement, so that the two agree.
SELECT a.segments_version AS version,
       coalesce((SELECT jsonb_agg(jsonb_build_object('id', s.segment_id, 'name', s.name, 'ready', s.status = 'ready', 'filter', s.filter)
                        ORDER BY s.created_at, s.segment_id)
                 FROM segments s WHERE s.account_id = a.account_id AND s.kind = 'dynamic'), '[]')::jsonb AS segments
FROM accounts a WHERE a.account_id = $1;

-- name: SegmentsHold :one
-- A write's hold on the account's segments, to the end of its transaction: a change of a
-- segment (SegmentsVersionBump) waits for the write to commit, and a write after the change
-- reads the version it made (a locking read sees the row's last committed version).
SELECT segments_version FROM accounts WHERE account_id = $1 FOR SHARE;

-- name: SegmentMembershipsOf :many
-- The segments the contacts are in, each with its kind, name and whether it is ready, in the
-- order the segments were saved.
-- The contacts' rows first, by the index on (account_id, contact_id): joined directly, a
-- generic plan would rather walk each segment's members by the primary key.
WITH m AS MATERIALIZED (
    SELECT contact_id, segment_id FROM segment_members
    WHERE account_id = @account_id AND contact_id = ANY(@contact_ids::uuid[])
)
SELECT m.contact_id, m.segment_id, s.kind, s.name, s.status = 'ready' AS ready
FROM m JOIN segments s ON s.account_id = @account_id AND s.segment_id = m.segment_id
ORDER BY m.contact_id, s.created_at, s.segment_id;

-- name: SegmentMembersSet :exec
-- Membership changes of a write (or a backfill page): the pairs that leave, then those that
-- enter.
WITH gone AS (
    DELETE FROM segment_members m
    USING (SELECT unnest(@gone_segment_ids::uuid[]) AS segment_id, unnest(@gone_contact_ids::uuid[]) AS contact_id) g
    WHERE m.account_id = @account_id AND m.segment_id = g.segment_id AND m.contact_id = g.contact_id
)
INSERT INTO segment_members (account_id, segment_id, contact_id, added_at)
SELECT @account_id, n.segment_id, n.contact_id, @now
FROM (SELECT unnest(@new_segment_ids::uuid[]) AS segment_id, unnest(@new_contact_ids::uuid[]) AS contact_id) n
ON CONFLICT DO NOTHING;

-- name: SegmentMembersPage :many
SELECT contact_id, added_at FROM segment_members
WHERE account_id = @account_id AND segment_id = @segment_id AND contact_id > @after
ORDER BY contact_id LIMIT @max_rows;

-- name: SegmentMembersCount :one
SELECT count(*) FROM segment_members WHERE account_id = $1 AND segment_id = $2;

-- name: SegmentMemberAdd :execrows
INSERT INTO segment_members (account_id, segment_id, contact_id, added_at)
VALUES (@account_id, @segment_id, @contact_id, @now)
ON CONFLICT DO NOTHING;

-- name: SegmentMemberRemove :execrows
DELETE FROM segment_members WHERE account_id = @account_id AND segment_id = @segment_id AND contact_id = @contact_id;

-- name: SegmentBackfillClaim :one
-- A backfilling segment no other process is filling (its lease ran out, or it has none),
-- leased to this one until @until, for one page: of the account whose turn came longest ago
-- (never first), its oldest such segment. The account's turn is now.
WITH picked AS (
    SELECT o.account_id, o.segment_id FROM segments o
    LEFT JOIN segment_backfill_turns t ON t.account_id = o.account_id
    WHERE o.status = 'backfilling' AND (o.backfill_lease IS NULL OR o.backfill_lease < @now::timestamptz)
    ORDER BY t.turn_at NULLS FIRST, o.updated_at, o.segment_id LIMIT 1 FOR UPDATE OF o SKIP LOCKED
), turn AS (
    INSERT INTO segment_backfill_turns (account_id, turn_at) SELECT account_id, @now::timestamptz FROM picked
    ON CONFLICT (account_id) DO UPDATE SET turn_at = excluded.turn_at
)
UPDATE segments s SET backfill_lease = @until::timestamptz
FROM picked WHERE s.account_id = picked.account_id AND s.segment_id = picked.segment_id
RETURNING s.account_id, s.segment_id, s.kind, s.filter, s.generation, s.backfill_after;

-- name: SegmentBackfillRelease :exec
-- A backfill that stopped on an error gives its segment back: the next claim (this process's
-- next look, or another's) goes on from the last page done, not a lease later. Only the lease
-- this backfill holds (@lease, the last it set): one that ran out may be another's now.
UPDATE segments SET backfill_lease = NULL
WHERE account_id = @account_id AND segment_id = @segment_id AND status = 'backfilling'
  AND generation = @generation AND backfill_lease = @lease::timestamptz;

-- name: SegmentBackfillLock :one
-- A backfill page's first statement: the segment's row, before any contact's, so that a
-- change of the segment (which takes the row, then waits for the writes that hold the
-- account's segments) never waits for a page that waits for one of those writes.
SELECT generation, status FROM segments WHERE account_id = $1 AND segment_id = $2 FOR NO KEY UPDATE;

-- name: SegmentBackfillMembers :many
-- The page's contacts that are members now.
SELECT contact_id FROM segment_members
WHERE account_id = @account_id AND segment_id = @segment_id AND contact_id = ANY(@contact_ids::uuid[]);

-- name: SegmentBackfillProgress :exec
-- A page done (its segment's row locked by SegmentBackfillLock), and the segment given back
-- for the next turn (@until null), or kept until @until to be made ready after its last page.
UPDATE segments SET backfill_after = @after, backfill_evaluated = backfill_evaluated + @evaluated,
    backfill_lease = sqlc.narg('until')::timestamptz
WHERE account_id = @account_id AND segment_id = @segment_id;

-- name: SegmentMembersOfNoContact :exec
-- A backfill's last step: the segment's rows whose contact is gone. Every write that deletes
-- contacts takes their rows first; a process of the release before 1.19.0 (during a rollout)
-- does not, and this is where what it left goes.
DELETE FROM segment_members m
WHERE m.account_id = $1 AND m.segment_id = $2
  AND NOT EXISTS (SELECT 1 FROM contacts c WHERE c.account_id = m.account_id AND c.contact_id = m.contact_id);

-- name: SegmentBackfillDone :execrows
-- The backfill of a generation finished: the segment is ready (in the transaction that bumps
-- the account's segments version, so that writes send its events from then on).
UPDATE segments SET status = 'ready', backfill_lease = NULL
WHERE account_id = @account_id AND segment_id = @segment_id AND generation = @generation AND status = 'backfilling';

-- name: SegmentMemberContact :one
-- The contact a snapshot segment's member is added or removed by hand, locked against its
-- delete (which takes the contact out of its segments first) until the change commits.
SELECT email, assigned_user_email_id FROM contacts WHERE account_id = $1 AND contact_id = $2 FOR SHARE;
