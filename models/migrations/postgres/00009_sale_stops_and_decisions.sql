-- Who made a sale's last pause or early end (its merchant or an admin: a merchant resumes only its own
-- pause), and whether its merchant has yet to see the reviewer's last decision (the console's badge).
-- Sales from before count as stopped by an admin and their decisions as seen.
-- +goose Up
ALTER TABLE activities ADD COLUMN stopped_by bigint;
ALTER TABLE activities ADD COLUMN decision_unseen boolean NOT NULL DEFAULT false;
-- +goose Down
ALTER TABLE activities DROP COLUMN decision_unseen;
ALTER TABLE activities DROP COLUMN stopped_by;
