-- Listing and searching contacts (GET /contacts, the export). Each filter is optional (NULL:
-- not applied); "plan per call" has the store plan each call with its actual values, so the
-- unused filters fold away and the index of each used one can be chosen (a prepared generic
-- plan could not). @q_prefix is a LIKE pattern ('jan%'), @q_words a tsquery ('jan:*').

-- name: ContactsByCreated :many
-- A page newest first, after the cursor (@after_at, @after_id) when @has_cursor.
SELECT /* plan per call */ * FROM contact_rows c
WHERE c.account_id = @account_id
  AND (sqlc.narg('tags')::text[] IS NULL OR lower_tags(c.tags) @> sqlc.narg('tags')::text[])
  AND (sqlc.narg('email_status')::text IS NULL OR c.email_status = sqlc.narg('email_status')::text)
  AND (sqlc.narg('record_status')::text IS NULL OR c.record_status = sqlc.narg('record_status')::text)
  AND (sqlc.narg('assigned_user')::text IS NULL OR lower(c.assigned_user_email_id) = sqlc.narg('assigned_user')::text)
  AND (sqlc.narg('created_after')::timestamptz IS NULL OR c.created_at >= sqlc.narg('created_after')::timestamptz)
  AND (sqlc.narg('created_before')::timestamptz IS NULL OR c.created_at < sqlc.narg('created_before')::timestamptz)
  AND (sqlc.narg('updated_after')::timestamptz IS NULL OR c.updated_at >= sqlc.narg('updated_after')::timestamptz)
  AND (sqlc.narg('min_stored_score')::int IS NULL OR c.lead_score >= sqlc.narg('min_stored_score')::int)
  AND (sqlc.narg('q_prefix')::text IS NULL
       OR c.email_key LIKE sqlc.narg('q_prefix')::text
       OR (sqlc.narg('q_words')::text IS NOT NULL AND name_words(c.name) @@ to_tsquery('simple', sqlc.narg('q_words')::text)))
  AND (NOT @has_cursor::bool OR (c.created_at, c.contact_id) < (@after_at::timestamptz, @after_id::uuid))
ORDER BY c.created_at DESC, c.contact_id DESC
LIMIT @row_limit;

-- name: ContactsByUpdated :many
-- A page most recently changed first, after the cursor (@after_at, @after_id) when @has_cursor.
SELECT /* plan per call */ * FROM contact_rows c
WHERE c.account_id = @account_id
  AND (sqlc.narg('tags')::text[] IS NULL OR lower_tags(c.tags) @> sqlc.narg('tags')::text[])
  AND (sqlc.narg('email_status')::text IS NULL OR c.email_status = sqlc.narg('email_status')::text)
  AND (sqlc.narg('record_status')::text IS NULL OR c.record_status = sqlc.narg('record_status')::text)
  AND (sqlc.narg('assigned_user')::text IS NULL OR lower(c.assigned_user_email_id) = sqlc.narg('assigned_user')::text)
  AND (sqlc.narg('created_after')::timestamptz IS NULL OR c.created_at >= sqlc.narg('created_after')::timestamptz)
  AND (sqlc.narg('created_before')::timestamptz IS NULL OR c.created_at < sqlc.narg('created_before')::timestamptz)
  AND (sqlc.narg('updated_after')::timestamptz IS NULL OR c.updated_at >= sqlc.narg('updated_after')::timestamptz)
  AND (sqlc.narg('min_stored_score')::int IS NULL OR c.lead_score >= sqlc.narg('min_stored_score')::int)
  AND (sqlc.narg('q_prefix')::text IS NULL
       OR c.email_key LIKE sqlc.narg('q_prefix')::text
       OR (sqlc.narg('q_words')::text IS NOT NULL AND name_words(c.name) @@ to_tsquery('simple', sqlc.narg('q_words')::text)))
  AND (NOT @has_cursor::bool OR (c.updated_at, c.contact_id) < (@after_at::timestamptz, @after_id::uuid))
ORDER BY c.updated_at DESC, c.contact_id DESC
LIMIT @row_limit;

-- name: ContactsPageWalkByCreated :many
-- The contacts of a page found walking up to @walk_limit contacts down the created_at order
-- after the cursor: the first @row_limit that match, read in the same statement (one round
-- trip). Fewer than @row_limit when matches are sparser than that, or the account ends. With
-- @fields_path (a jsonpath predicate on custom fields) it is the first stretch of a page so
-- filtered, reading each walked contact's values. The
-- walk hands the outer scan an array of ids (an InitPlan): written as a join of the two, the
-- statement is slower both to plan and to run.
SELECT /* plan per call */ * FROM contact_rows r
WHERE r.account_id = @account_id AND r.contact_id = ANY(ARRAY(
    SELECT w.contact_id FROM (
    SELECT c.contact_id,
    coalesce((sqlc.narg('tags')::text[] IS NULL OR c.tag_keys @> sqlc.narg('tags')::text[])
     AND (sqlc.narg('fields_path')::jsonpath IS NULL OR c.custom_fields @@ sqlc.narg('fields_path')::jsonpath)
     AND (sqlc.narg('email_status')::text IS NULL OR c.email_status = sqlc.narg('email_status')::text)
     AND (sqlc.narg('record_status')::text IS NULL OR c.record_status = sqlc.narg('record_status')::text)
     AND (sqlc.narg('assigned_user')::text IS NULL OR lower(c.assigned_user_email_id) = sqlc.narg('assigned_user')::text)
     AND (sqlc.narg('min_stored_score')::int IS NULL OR c.lead_score >= sqlc.narg('min_stored_score')::int)
     AND (sqlc.narg('q_prefix')::text IS NULL
          OR c.email_key LIKE sqlc.narg('q_prefix')::text
          OR (sqlc.narg('q_words')::text IS NOT NULL AND c.name_keys @@ to_tsquery('simple', sqlc.narg('q_words')::text))), false)::bool AS matched
    FROM contacts c
    WHERE c.account_id = @account_id
      AND (sqlc.narg('created_after')::timestamptz IS NULL OR c.created_at >= sqlc.narg('created_after')::timestamptz)
      AND (sqlc.narg('created_before')::timestamptz IS NULL OR c.created_at < sqlc.narg('created_before')::timestamptz)
      AND (sqlc.narg('updated_after')::timestamptz IS NULL OR c.updated_at >= sqlc.narg('updated_after')::timestamptz)
      AND (NOT @has_cursor::bool OR (c.created_at, c.contact_id) < (@after_at::timestamptz, @after_id::uuid))
    ORDER BY c.created_at DESC, c.contact_id DESC
    LIMIT @walk_limit
    ) w
    WHERE w.matched
    LIMIT @row_limit))
ORDER BY r.created_at DESC, r.contact_id DESC;

-- name: ContactsPageWalkByUpdated :many
-- The contacts of a page found walking up to @walk_limit contacts down the updated_at order
-- after the cursor: the first @row_limit that match, read in the same statement (one round
-- trip). Fewer than @row_limit when matches are sparser than that, or the account ends. The
-- walk hands the outer scan an array of ids (an InitPlan): written as a join of the two, the
-- statement is slower both to plan and to run.
SELECT /* plan per call */ * FROM contact_rows r
WHERE r.account_id = @account_id AND r.contact_id = ANY(ARRAY(
    SELECT w.contact_id FROM (
    SELECT c.contact_id,
    coalesce((sqlc.narg('tags')::text[] IS NULL OR c.tag_keys @> sqlc.narg('tags')::text[])
     AND (sqlc.narg('fields_path')::jsonpath IS NULL OR c.custom_fields @@ sqlc.narg('fields_path')::jsonpath)
     AND (sqlc.narg('email_status')::text IS NULL OR c.email_status = sqlc.narg('email_status')::text)
     AND (sqlc.narg('record_status')::text IS NULL OR c.record_status = sqlc.narg('record_status')::text)
     AND (sqlc.narg('assigned_user')::text IS NULL OR lower(c.assigned_user_email_id) = sqlc.narg('assigned_user')::text)
     AND (sqlc.narg('min_stored_score')::int IS NULL OR c.lead_score >= sqlc.narg('min_stored_score')::int)
     AND (sqlc.narg('q_prefix')::text IS NULL
          OR c.email_key LIKE sqlc.narg('q_prefix')::text
          OR (sqlc.narg('q_words')::text IS NOT NULL AND c.name_keys @@ to_tsquery('simple', sqlc.narg('q_words')::text))), false)::bool AS matched
    FROM contacts c
    WHERE c.account_id = @account_id
      AND (sqlc.narg('created_after')::timestamptz IS NULL OR c.created_at >= sqlc.narg('created_after')::timestamptz)
      AND (sqlc.narg('created_before')::timestamptz IS NULL OR c.created_at < sqlc.narg('created_before')::timestamptz)
      AND (sqlc.narg('updated_after')::timestamptz IS NULL OR c.updated_at >= sqlc.narg('updated_after')::timestamptz)
      AND (NOT @has_cursor::bool OR (c.updated_at, c.contact_id) < (@after_at::timestamptz, @after_id::uuid))
    ORDER BY c.updated_at DESC, c.contact_id DESC
    LIMIT @walk_limit
    ) w
    WHERE w.matched
    LIMIT @row_limit))
ORDER BY r.updated_at DESC, r.contact_id DESC;

-- name: ContactsTaggedPage :many
-- ContactsPageWalkByCreated for the commonest search, tags alone, at the default page size
-- (50; walking at most 8,000): a statement of its own that PostgreSQL plans once per
-- connection, where the general one is planned on each call. It has
-- no optional filters to fold away, its cursor is always given (the first page's is past
-- every contact), and its limits are constants: a generic plan costs a parameter's LIMIT as
-- a tenth of the rows, and would never be chosen over the custom ones.
SELECT * FROM contact_rows r
WHERE r.account_id = @account_id AND r.contact_id = ANY(ARRAY(
    SELECT w.contact_id FROM (
    SELECT c.contact_id, c.tag_keys @> @tags::text[] AS matched
    FROM contacts c
    WHERE c.account_id = @account_id AND (c.created_at, c.contact_id) < (@after_at::timestamptz, @after_id::uuid)
    ORDER BY c.created_at DESC, c.contact_id DESC
    LIMIT 8000
    ) w
    WHERE w.matched
    LIMIT 50))
ORDER BY r.created_at DESC, r.contact_id DESC;

-- name: ContactsSearchPage :many
-- ContactsTaggedPage for the other common search, q alone (with words in it): the email's
-- prefix (@q_prefix, a LIKE pattern) or a word of the name (@q_words, a tsquery, made once
-- per call by its InitPlan).
SELECT * FROM contact_rows r
WHERE r.account_id = @account_id AND r.contact_id = ANY(ARRAY(
    SELECT w.contact_id FROM (
    SELECT c.contact_id,
        (c.email_key LIKE @q_prefix::text OR c.name_keys @@ (SELECT to_tsquery('simple', @q_words::text))) AS matched
    FROM contacts c
    WHERE c.account_id = @account_id AND (c.created_at, c.contact_id) < (@after_at::timestamptz, @after_id::uuid)
    ORDER BY c.created_at DESC, c.contact_id DESC
    LIMIT 8000
    ) w
    WHERE w.matched
    LIMIT 50))
ORDER BY r.created_at DESC, r.contact_id DESC;

-- name: ContactsWalkByCreated :many
-- The export's walk: up to @walk_limit contacts in created_at order after the cursor, keys
-- only, each with whether it matches the filters (an index-only scan of the creation order's
-- index, which carries what the filters compare). The export reads the matches' contacts
-- next, and walks on from the last key. A page filtered by custom fields (@fields_path, a
-- jsonpath predicate) is answered by this walk alone: the predicate reads each walked row.
SELECT /* plan per call */ c.created_at AS at, c.contact_id,
    coalesce((sqlc.narg('tags')::text[] IS NULL OR c.tag_keys @> sqlc.narg('tags')::text[])
     AND (sqlc.narg('fields_path')::jsonpath IS NULL OR c.custom_fields @@ sqlc.narg('fields_path')::jsonpath)
     AND (sqlc.narg('email_status')::text IS NULL OR c.email_status = sqlc.narg('email_status')::text)
     AND (sqlc.narg('record_status')::text IS NULL OR c.record_status = sqlc.narg('record_status')::text)
     AND (sqlc.narg('assigned_user')::text IS NULL OR lower(c.assigned_user_email_id) = sqlc.narg('assigned_user')::text)
     AND (sqlc.narg('min_stored_score')::int IS NULL OR c.lead_score >= sqlc.narg('min_stored_score')::int)
     AND (sqlc.narg('q_prefix')::text IS NULL
          OR c.email_key LIKE sqlc.narg('q_prefix')::text
          OR (sqlc.narg('q_words')::text IS NOT NULL AND c.name_keys @@ to_tsquery('simple', sqlc.narg('q_words')::text))), false)::bool AS matched
FROM contacts c
WHERE c.account_id = @account_id
  AND (sqlc.narg('created_after')::timestamptz IS NULL OR c.created_at >= sqlc.narg('created_after')::timestamptz)
  AND (sqlc.narg('created_before')::timestamptz IS NULL OR c.created_at < sqlc.narg('created_before')::timestamptz)
  AND (sqlc.narg('updated_after')::timestamptz IS NULL OR c.updated_at >= sqlc.narg('updated_after')::timestamptz)
  AND (NOT @has_cursor::bool OR (c.created_at, c.contact_id) < (@after_at::timestamptz, @after_id::uuid))
ORDER BY c.created_at DESC, c.contact_id DESC
LIMIT @walk_limit;

-- name: ContactsFieldMatches :many
-- Up to @candidate_limit contacts after the cursor that match the filters, found through the
-- custom fields' index (contacts_custom_fields answers the equalities of @fields_path), in no
-- order. Fewer than @candidate_limit are every match after the cursor; as many may not be, and
-- the caller walks the creation order instead. The limit bounds the rows read whatever plan
-- PostgreSQL takes: a match's row is read once.
SELECT /* plan per call */ c.created_at AS at, c.contact_id
FROM contacts c
WHERE c.account_id = @account_id
  AND c.custom_fields <> '{}'::jsonb
  AND c.custom_fields @@ @fields_path::jsonpath
  AND (sqlc.narg('tags')::text[] IS NULL OR c.tag_keys @> sqlc.narg('tags')::text[])
  AND (sqlc.narg('email_status')::text IS NULL OR c.email_status = sqlc.narg('email_status')::text)
  AND (sqlc.narg('record_status')::text IS NULL OR c.record_status = sqlc.narg('record_status')::text)
  AND (sqlc.narg('assigned_user')::text IS NULL OR lower(c.assigned_user_email_id) = sqlc.narg('assigned_user')::text)
  AND (sqlc.narg('min_stored_score')::int IS NULL OR c.lead_score >= sqlc.narg('min_stored_score')::int)
  AND (sqlc.narg('q_prefix')::text IS NULL
       OR c.email_key LIKE sqlc.narg('q_prefix')::text
       OR (sqlc.narg('q_words')::text IS NOT NULL AND c.name_keys @@ to_tsquery('simple', sqlc.narg('q_words')::text)))
  AND (sqlc.narg('created_after')::timestamptz IS NULL OR c.created_at >= sqlc.narg('created_after')::timestamptz)
  AND (sqlc.narg('created_before')::timestamptz IS NULL OR c.created_at < sqlc.narg('created_before')::timestamptz)
  AND (sqlc.narg('updated_after')::timestamptz IS NULL OR c.updated_at >= sqlc.narg('updated_after')::timestamptz)
  AND (NOT @has_cursor::bool OR (c.created_at, c.contact_id) < (@after_at::timestamptz, @after_id::uuid))
LIMIT @candidate_limit;

-- name: ContactsWalkedTo :one
-- The contact after @skip others down the created_at order after the cursor: where a walk of
-- @skip + 1 ended (no row: the account ended first). An index-only scan of the creation order.
SELECT c.created_at AS at, c.contact_id
FROM contacts c
WHERE c.account_id = @account_id
  AND (sqlc.narg('created_after')::timestamptz IS NULL OR c.created_at >= sqlc.narg('created_after')::timestamptz)
  AND (sqlc.narg('created_before')::timestamptz IS NULL OR c.created_at < sqlc.narg('created_before')::timestamptz)
  AND (sqlc.narg('updated_after')::timestamptz IS NULL OR c.updated_at >= sqlc.narg('updated_after')::timestamptz)
  AND (NOT @has_cursor::bool OR (c.created_at, c.contact_id) < (@after_at::timestamptz, @after_id::uuid))
ORDER BY c.created_at DESC, c.contact_id DESC
OFFSET @skip LIMIT 1;

-- name: ContactsByIDs :many
-- The contacts of the account with these ids (in no order).
SELECT * FROM contact_rows WHERE account_id = @account_id AND contact_id = ANY(@ids::uuid[]);
