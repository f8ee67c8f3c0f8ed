-- +goose Up
-- A dynamic segment's price (segment.Filter.Price: the lookups its filter may take on one write
-- of a contact), computed in Go when the filter is saved, so that the account's segments are
-- priced together by a sum, without reading their filters. NULL for the segments saved before:
-- the next save of one of the account's segments prices them (and stores their prices).
ALTER TABLE segments ADD COLUMN price integer;

-- +goose Down
ALTER TABLE segments DROP COLUMN price;
