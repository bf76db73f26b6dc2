-- Why an order was cancelled (its buyer, the unpaid timeout, ...), for its buyer's pages; the time is
-- cancelled_at. Orders cancelled before keep '' (the page then says when only).
-- +goose Up
ALTER TABLE orders ADD COLUMN cancel_reason text NOT NULL DEFAULT '';
-- +goose Down
ALTER TABLE orders DROP COLUMN cancel_reason;
