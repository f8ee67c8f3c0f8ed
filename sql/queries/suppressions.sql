-- name: SuppressionKeyGet :one
SELECT key_sealed FROM suppression_key;

-- name: SuppressionKeyCreate :exec
-- The key, once: a second process creating it at the same moment leaves the first one's.
INSERT INTO suppression_key (key_sealed, created_at) VALUES (@key_sealed, @created_at)
ON CONFLICT (singleton) DO NOTHING;

-- name: SuppressionKeyReseal :execrows
-- Stores the key sealed anew (`contactd secrets rekey`) unless it changed since it was read.
UPDATE suppression_key SET key_sealed = @key_sealed WHERE key_sealed = @was;

-- name: SuppressionsAdd :exec
INSERT INTO suppressions (account_id, digest, kind, erasure_id, created_at)
SELECT @account_id, unnest(@digests::bytea[]), unnest(@kinds::text[]), @erasure_id, @created_at
ON CONFLICT (account_id, digest) DO NOTHING;

-- name: SuppressionsMatching :many
-- Which of @digests the account suppresses.
SELECT digest FROM suppressions WHERE account_id = @account_id AND digest = ANY(@digests::bytea[]);

-- name: SuppressionRemove :execrows
DELETE FROM suppressions WHERE account_id = @account_id AND digest = @digest;
