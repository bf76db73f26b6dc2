-- Which role made a sale's last pause or early end ('merchant' or 'admin': a merchant resumes only its
-- own pause), and whether its merchant has yet to see the reviewer's last decision (the console's badge).
-- Sales from before ('') were stopped by an admin, and their decisions count as seen.
-- +goose Up
ALTER TABLE activities ADD COLUMN stopped_by varchar(16) NOT NULL DEFAULT '';
ALTER TABLE activities ADD COLUMN decision_unseen boolean NOT NULL DEFAULT false;
-- +goose Down
ALTER TABLE activities DROP COLUMN decision_unseen;
ALTER TABLE activities DROP COLUMN stopped_by;
