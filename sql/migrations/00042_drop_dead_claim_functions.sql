-- +goose Up
-- The delivery claims became statements of their own (DeliveryClaim, DeliveryClaimNext; the
-- locks they take are the functions' were): neither this release nor the previous one calls
-- these functions any more, so they go (the rolling-upgrade rule: a release may drop what the
-- previous one does not use).
DROP FUNCTION claim_deliveries(timestamptz, timestamptz, int, int, float8);
DROP FUNCTION claim_deliveries_alone(timestamptz, timestamptz, int, int, float8);
DROP FUNCTION claim_next_delivery(uuid, uuid, timestamptz, timestamptz, int);

-- +goose Down
-- Nothing to restore: no release that runs on the schema below this one calls them (the
-- release that last did ran on 00036's).
SELECT 1;
