-- Appeals (one person, one chance): a shopper in a queue sale's line asks a person to look, and an admin
-- answers. Open ones are looked up by (user, item) and listed by state, newest first.
-- +goose Up
CREATE TABLE appeals (
    id          integer PRIMARY KEY AUTOINCREMENT,
    user_id     integer  NOT NULL,
    item_id     integer  NOT NULL,
    message     text     NOT NULL,
    state       text     NOT NULL DEFAULT 'open',
    answer      text,
    answered_by integer,
    answered_at datetime,
    created_at  datetime NOT NULL,
    updated_at  datetime NOT NULL
);
CREATE INDEX idx_appeals_user_item ON appeals (user_id, item_id);
CREATE INDEX idx_appeals_item_id ON appeals (item_id);
CREATE INDEX idx_appeals_state ON appeals (state);
CREATE INDEX idx_appeals_created_at ON appeals (created_at);
-- +goose Down
DROP TABLE appeals;
