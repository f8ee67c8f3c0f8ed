-- +goose Up
-- Custom fields: each account defines the fields its contacts may carry (docs/api.md, "Custom
-- fields"). A field's key and type never change; options are only added or archived, never
-- removed, since contacts may hold them.
CREATE TABLE contact_fields (
    account_id uuid NOT NULL REFERENCES accounts ON DELETE CASCADE,
    key text NOT NULL,
    label text NOT NULL,
    description text NOT NULL DEFAULT '',
    type text NOT NULL CHECK (type IN ('text', 'number', 'boolean', 'date', 'datetime', 'enum', 'multiEnum', 'email', 'phone', 'url')),
    required boolean NOT NULL DEFAULT false,
    is_unique boolean NOT NULL DEFAULT false,
    options jsonb NOT NULL DEFAULT '[]',
    validation jsonb NOT NULL DEFAULT '{}',
    archived_at timestamptz,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (account_id, key)
);

-- +goose Down
DROP TABLE contact_fields;
