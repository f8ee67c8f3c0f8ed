-- +goose Up
-- A claim reads its delivery's event by the event's id, which the claim itself finds: to
-- PostgreSQL a join key, not a value known when the statement starts. The claims keep one
-- generic plan (00037's reasons), and a generic plan that joins the events by a join key
-- starts a scan of every partition of webhook_events, one per day kept (30 by default), to
-- prune all but one per row: in the bench, 30 more partitions cost a delivery 0.24 ms more
-- of PostgreSQL CPU (0.45 to 0.69 ms). Read through this function, the event's id is a
-- parameter of the function's own statement, and PostgreSQL prunes the partitions before it
-- starts it: a delivery's cost no longer grows with the days of events kept.
-- +goose StatementBegin
CREATE FUNCTION delivery_event(p_account uuid, p_event uuid)
RETURNS TABLE (event_type text, payload text)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY SELECT e.event_type, e.payload::text FROM webhook_events e
    WHERE e.account_id = p_account AND e.event_id = p_event;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION delivery_event(uuid, uuid);
