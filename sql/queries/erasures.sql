-- name: ErasureInsert :exec
INSERT INTO erasures (account_id, erasure_id, contact_id, erased_at, key_id, key_prefix, key_name,
    suppressed, events_redacted)
VALUES (@account_id, @erasure_id, @contact_id, @erased_at, @key_id, @key_prefix, @key_name,
    @suppressed, @events_redacted);

-- name: ErasureState :one
-- Whether a restored database has the account of a journalled erasure, and the erasure.
SELECT EXISTS (SELECT 1 FROM accounts a WHERE a.account_id = @account_id::uuid)::boolean AS account,
    EXISTS (SELECT 1 FROM erasures e WHERE e.account_id = @account_id::uuid AND e.erasure_id = @erasure_id::uuid)::boolean AS erased;
