-- +goose Up
-- A version 7 UUID for a time (RFC 9562: 48 bits of Unix milliseconds, then random bits), for
-- rows a statement creates in numbers Go cannot know beforehand: the deliveries a create or a
-- tag change queues to the account's subscriptions in its own statement. Ids in time order
-- keep those rows' index entries at the end of their indexes, as the ids Go makes.
-- +goose StatementBegin
CREATE FUNCTION uuid_v7(at timestamptz) RETURNS uuid LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
    SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
        PLACING substring(int8send((extract(epoch FROM at) * 1000)::bigint) FROM 3) FROM 1 FOR 6),
        52, 1), 53, 1), 'hex')::uuid
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION uuid_v7(timestamptz);
