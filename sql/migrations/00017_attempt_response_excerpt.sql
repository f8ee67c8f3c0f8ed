-- +goose Up
-- The start of the receiver's answer to each attempt (at most 256 bytes of valid UTF-8; NULL
-- when the answer had no body), for the delivery log: what the receiver said when it refused.
ALTER TABLE webhook_attempts ADD COLUMN response_excerpt text;

-- +goose Down
ALTER TABLE webhook_attempts DROP COLUMN response_excerpt;
