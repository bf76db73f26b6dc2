-- The sale's rules (one person, one chance), fixed at approval. Activities from before the rules have
-- both off, as they were approved without them; the highest account id at approval bounds the accounts
-- made before it (ids are given in the order accounts are made).
-- +goose Up
ALTER TABLE activities ADD COLUMN rule_one_per_address numeric NOT NULL DEFAULT false;
ALTER TABLE activities ADD COLUMN rule_accounts_before_approval numeric NOT NULL DEFAULT false;
ALTER TABLE activities ADD COLUMN eligible_through integer;
-- +goose Down
ALTER TABLE activities DROP COLUMN eligible_through;
ALTER TABLE activities DROP COLUMN rule_accounts_before_approval;
ALTER TABLE activities DROP COLUMN rule_one_per_address;
