-- name: PeriodicEnsure :exec
-- Registers tasks unknown so far, due at @now; a task already known keeps its due time, so
-- restarting a process does not run everything again.
INSERT INTO periodic_tasks (name, due_at)
SELECT unnest(@names::text[]), @now::timestamptz
ON CONFLICT (name) DO NOTHING;

-- name: PeriodicClaim :many
-- Claims the tasks among @names that are due, moving each to its next run (@next_due_ats, in
-- the order of @names): one process gets each run.
UPDATE periodic_tasks p
SET due_at = t.next_due_at, last_started_at = @now::timestamptz
FROM (SELECT unnest(@names::text[]) AS name, unnest(@next_due_ats::timestamptz[]) AS next_due_at) t
WHERE p.name = t.name AND p.due_at <= @now::timestamptz
RETURNING p.name;

-- name: PeriodicFinish :exec
UPDATE periodic_tasks SET last_finished_at = @now::timestamptz, last_error = sqlc.narg('last_error')
WHERE name = @name;
