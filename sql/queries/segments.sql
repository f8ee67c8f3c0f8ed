-- Segments (internal/segment): an account's saved filters of its contacts.

-- name: SegmentsLock :exec
-- One segment of the account is created at a time, so that the limit is counted by one
-- writer.
SELECT pg_advisory_xact_lock(hashtextextended('contactd.segments/' || (sqlc.arg('account_id')::uuid)::text, 0));

-- name: SegmentsCount :one
SELECT count(*) FROM segments WHERE account_id = $1;

-- name: SegmentInsert :many
-- Nothing when the account has a segment of that name (in any case).
INSERT INTO segments (account_id, segment_id, name, kind, filter, created_at, updated_at)
VALUES (@account_id, @segment_id, @name, @kind, @filter, @now, @now)
ON CONFLICT (account_id, lower(name)) DO NOTHING
RETURNING *;

-- name: SegmentList :many
SELECT * FROM segments WHERE account_id = $1 ORDER BY created_at, segment_id;

-- name: SegmentGet :one
SELECT * FROM segments WHERE account_id = $1 AND segment_id = $2;

-- name: SegmentUpdate :many
-- Nothing when another segment of the account has the name (in any case); the segment is
-- then read again by the caller to tell that from a segment that is gone.
UPDATE segments s SET name = @name, filter = @filter, updated_at = @now
WHERE s.account_id = @account_id AND s.segment_id = @segment_id
  AND NOT EXISTS (SELECT 1 FROM segments o WHERE o.account_id = @account_id AND lower(o.name) = lower(@name)
                  AND o.segment_id <> @segment_id)
RETURNING *;

-- name: SegmentDelete :execrows
DELETE FROM segments WHERE account_id = $1 AND segment_id = $2;

-- name: SegmentsVersionBump :exec
-- In the transaction of every change of a segment (SegmentsDynamic's version).
UPDATE accounts SET segments_version = segments_version + 1 WHERE account_id = $1;

-- name: SegmentsVersion :one
SELECT segments_version FROM accounts WHERE account_id = $1;

-- name: SegmentsDynamic :one
-- The account's dynamic segments in the order they were saved, at the version they are: one
-- statement, so that the two agree.
SELECT a.segments_version AS version,
       coalesce((SELECT jsonb_agg(jsonb_build_object('id', s.segment_id, 'filter', s.filter) ORDER BY s.created_at, s.segment_id)
                 FROM segments s WHERE s.account_id = a.account_id AND s.kind = 'dynamic'), '[]')::jsonb AS segments
FROM accounts a WHERE a.account_id = $1;
