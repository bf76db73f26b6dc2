-- The draw seed of each queue sale's waiting room, kept beside Redis's copy so that a lost Redis (or a
-- failover that lost the room) reopens the room with the same seed and the same published hash. The
-- seed is sealed (AES-256-GCM under LINE_SEED_KEY, which only the app holds): the shop's staff, who can
-- read this table, cannot learn it before the draw. One row an item, written once, before its hash is
-- published.
-- +goose Up
CREATE TABLE draw_seeds (
    item_id    bigint      PRIMARY KEY,
    seed_hash  varchar(64) NOT NULL,
    sealed     bytea       NOT NULL,
    created_at timestamptz NOT NULL
);
-- +goose Down
DROP TABLE draw_seeds;
