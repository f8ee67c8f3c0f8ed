-- name: ErasureInsert :exec
INSERT INTO erasures (account_id, erasure_id, contact_id, erased_at, key_id, key_prefix, key_name,
    suppressed, events_redacted)
VALUES (@account_id, @erasure_id, @contact_id, @erased_at, @key_id, @key_prefix, @key_name,
    @suppressed, @events_redacted);
