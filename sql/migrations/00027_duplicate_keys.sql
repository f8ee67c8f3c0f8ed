-- +goose Up
-- Finding likely duplicates (issue 32): each contact's phone as its digits and its email as
-- its provider reads it are kept on the row, computed by PostgreSQL from the columns they
-- come from, so that an index holds them with the contact's id and a page of duplicate
-- groups is an index-only walk that stops once it has its groups. Only contacts that have a
-- phone, or an email at a provider that ignores dots or +tags, are in these indexes.

-- The digits of a phone, a leading US 1 before ten more dropped (as the suppression list
-- compares phones: suppress.PhoneKey); NULL when it has none.
CREATE FUNCTION contact_phone_key(phone text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE RETURNS NULL ON NULL INPUT AS $$
    SELECT CASE
        WHEN d = '' THEN NULL
        WHEN length(d) = 11 AND left(d, 1) = '1' THEN substr(d, 2)
        ELSE d
    END
    FROM (SELECT regexp_replace(phone, '[^0-9]', '', 'g') AS d) digits
$$;

-- An email key as its provider reads it, for the providers that ignore dots (Gmail) or a
-- +tag in the local part; NULL for every other provider (their rules are unknown).
CREATE FUNCTION contact_email_canon(email_key text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE RETURNS NULL ON NULL INPUT AS $$
    SELECT CASE
        WHEN domain IN ('gmail.com', 'googlemail.com')
            THEN replace(split_part(local, '+', 1), '.', '') || '@gmail.com'
        WHEN domain IN ('outlook.com', 'hotmail.com', 'live.com', 'icloud.com', 'me.com', 'mac.com',
                        'fastmail.com', 'proton.me', 'protonmail.com', 'pm.me')
            THEN split_part(local, '+', 1) || '@' || domain
    END
    FROM (SELECT split_part(email_key, '@', 1) AS local, split_part(email_key, '@', 2) AS domain) parts
$$;

ALTER TABLE contacts
    ADD COLUMN phone_key text GENERATED ALWAYS AS (contact_phone_key(phone)) STORED,
    ADD COLUMN email_canon text GENERATED ALWAYS AS (contact_email_canon(email_key)) STORED;

CREATE INDEX contacts_phone_key ON contacts (account_id, phone_key, contact_id) WHERE phone_key IS NOT NULL;
CREATE INDEX contacts_email_canon ON contacts (account_id, email_canon, contact_id) WHERE email_canon IS NOT NULL;
CREATE INDEX properties_active_address ON properties (account_id, normalized, contact_id) WHERE archived_at IS NULL;

-- +goose Down
DROP INDEX properties_active_address;
ALTER TABLE contacts DROP COLUMN email_canon, DROP COLUMN phone_key;
DROP FUNCTION contact_email_canon(text);
DROP FUNCTION contact_phone_key(text);
