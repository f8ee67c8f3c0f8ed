-- +goose Up
-- A receiver's leases are counted on every claim (its room: at most max_in_flight attempts at
-- once). Counted through webhook_deliveries_leased (leased_until) or, as the planner preferred
-- for a worker's DeliveryClaimNext, by reading each of the receiver's subscriptions' deliveries
-- through webhook_deliveries_subscription, a claim read the receiver's whole history: 9,465
-- rows for one lease count in a 30 s run of `contactbench -only webhooks`, 35 ms of a 59 ms
-- claim. Keyed by subscription, a count reads the subscription's leases alone, and the
-- entries of leases since recorded (every delivery leaves one until vacuum) are marked dead by
-- the first index scan that meets them, so later counts and the dispatcher's scan of every
-- lease skip them.
CREATE INDEX webhook_deliveries_leases ON webhook_deliveries (account_id, subscription_id, leased_until)
    WHERE leased_until IS NOT NULL;
DROP INDEX webhook_deliveries_leased;
-- A worker's count finds the receiver's subscriptions by their URL, which read every
-- subscription of every account. A hash index: URLs may be longer than a B-tree entry can be.
CREATE INDEX webhook_subscriptions_url ON webhook_subscriptions USING hash (url);

-- +goose Down
CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (leased_until) WHERE leased_until IS NOT NULL;
DROP INDEX webhook_deliveries_leases;
DROP INDEX webhook_subscriptions_url;
