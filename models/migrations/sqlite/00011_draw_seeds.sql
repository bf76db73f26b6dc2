-- The draw seed of each queue sale's waiting room, kept beside Redis's copy so that a lost Redis (or a
-- failover that lost the room) reopens the room with the same seed and the same published hash. The
-- seed is sealed (AES-256-GCM under LINE_SEED_KEY, which only the app holds): the shop's staff, who can
-- read this table, cannot learn it before the draw. One row an item, written once, before its hash is
-- published.
-- +goose Up
CREATE TABLE draw_seeds (
    item_id    integer,
    seed_hash  text     NOT NULL,
    sealed     blob     NOT NULL,
    created_at datetime NOT NULL,
    PRIMARY KEY (item_id)
);
-- +goose Down
DROP TABLE draw_seeds;
