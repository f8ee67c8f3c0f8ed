-- name: DuplicatesByPhone :many
-- Groups of the account's contacts with the same phone digits, after @after: an index-only
-- walk of contacts_phone_key that stops at the page's last group.
SELECT phone_key::text AS match, count(*)::int AS size,
    (array_agg(contact_id ORDER BY contact_id))[1:100]::uuid[] AS contact_ids
FROM contacts
WHERE account_id = @account_id AND phone_key IS NOT NULL AND phone_key > @after::text
GROUP BY phone_key
HAVING count(*) > 1
ORDER BY phone_key
LIMIT @page_limit;

-- name: DuplicatesByEmail :many
-- Groups of the account's contacts whose emails the provider reads as one, after @after.
SELECT email_canon::text AS match, count(*)::int AS size,
    (array_agg(contact_id ORDER BY contact_id))[1:100]::uuid[] AS contact_ids
FROM contacts
WHERE account_id = @account_id AND email_canon IS NOT NULL AND email_canon > @after::text
GROUP BY email_canon
HAVING count(*) > 1
ORDER BY email_canon
LIMIT @page_limit;

-- name: SharedAddresses :many
-- The account's active addresses from @from_address on that more than one contact has, with those
-- contacts: an index-only walk of properties_active_address that stops at the page's last.
SELECT normalized::text AS address, array_agg(contact_id)::uuid[] AS contact_ids
FROM properties
WHERE account_id = @account_id AND archived_at IS NULL AND normalized >= @from_address::text
GROUP BY normalized
HAVING count(*) > 1
ORDER BY normalized
LIMIT @page_limit;

-- name: ContactNames :many
-- The trimmed, lower-case names of some of the account's contacts ("" when none).
SELECT contact_id, lower(btrim(coalesce(name, '')))::text AS name
FROM contacts
WHERE account_id = @account_id AND contact_id = ANY(@contact_ids::uuid[]);
