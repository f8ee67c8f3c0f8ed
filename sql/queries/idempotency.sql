-- name: IdempotencyLock :one
-- Takes the key for this transaction, or answers false at once when another request holds
-- it: that request is still running.
SELECT pg_try_advisory_xact_lock(hashtextextended(sqlc.arg('account_id')::uuid::text || '/' || sqlc.arg('key')::text, 0));

-- name: IdempotencyGet :one
SELECT fingerprint, method, path, status, headers, body FROM idempotency_keys
WHERE account_id = $1 AND key = $2 AND expires_at > $3;

-- name: IdempotencySave :exec
-- An expired key not pruned yet is reused.
INSERT INTO idempotency_keys (account_id, key, fingerprint, method, path, status, headers, body, created_at, expires_at,
    contact_ids)
VALUES (@account_id, @key, @fingerprint, @method, @path, @status, @headers, @body, @created_at, @expires_at,
    @contact_ids)
ON CONFLICT (account_id, key) DO UPDATE SET
    fingerprint = excluded.fingerprint, method = excluded.method, path = excluded.path,
    status = excluded.status, headers = excluded.headers, body = excluded.body,
    created_at = excluded.created_at, expires_at = excluded.expires_at, contact_ids = excluded.contact_ids;

-- name: IdempotencyPrune :execrows
DELETE FROM idempotency_keys k
WHERE k.ctid = ANY (ARRAY(SELECT e.ctid FROM idempotency_keys e WHERE e.expires_at <= sqlc.arg('before') LIMIT sqlc.arg('batch')));

-- name: IdempotencyBodiesToReseal :many
-- Stored bodies not sealed under the current key (@current_prefix, "v1.<key id>."), a page at
-- a time in key order, for `contactd secrets rekey`.
SELECT account_id, key, body FROM idempotency_keys
WHERE (account_id, key) > (@after_account::uuid, @after_key::text)
  AND substring(body FROM 1 FOR length(@current_prefix::bytea)) <> @current_prefix::bytea
ORDER BY account_id, key
LIMIT @page_size;

-- name: IdempotencySetBody :exec
-- Replaces a stored body unless the row changed since it was read.
UPDATE idempotency_keys SET body = @body WHERE account_id = @account_id AND key = @key AND body = @was;

-- name: IdempotencyForgetContact :execrows
-- Deletes the stored responses about a contact, for its erasure.
-- (contact_ids @> one: what the GIN index of migration 00043 answers.)
DELETE FROM idempotency_keys WHERE account_id = @account_id AND contact_ids @> ARRAY[@contact_id::uuid];
