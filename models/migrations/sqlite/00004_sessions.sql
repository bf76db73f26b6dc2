-- Sessions (devices): one row per login, keyed by the session id its signed cookie carries, so that a
-- person sees where they are logged in and ends one session alone. public_id is what the API shows (a
-- hash of the id). The check on every request stays in memory: rows are read at login, by the account
-- page, and by each instance's refresh of the sessions ended lately (ended_at).
-- +goose Up
CREATE TABLE sessions (
    id           text     NOT NULL,
    public_id    text     NOT NULL,
    user_id      integer  NOT NULL,
    browser      text     NOT NULL,
    system       text     NOT NULL,
    ip           text     NOT NULL,
    created_at   datetime NOT NULL,
    last_seen_at datetime NOT NULL,
    expires_at   datetime NOT NULL,
    ended_at     datetime,
    PRIMARY KEY (id)
);
CREATE UNIQUE INDEX idx_sessions_public_id ON sessions (public_id);
CREATE INDEX idx_sessions_user_id ON sessions (user_id);
CREATE INDEX idx_sessions_ended_at ON sessions (ended_at);
-- +goose Down
DROP TABLE sessions;
