-- Sessions (devices): one row per login, keyed by the session id its signed cookie carries, so that a
-- person sees where they are logged in and ends one session alone. public_id is what the API shows (a
-- hash of the id). The check on every request stays in memory: rows are read at login, by the account
-- page, and by each instance's refresh of the sessions ended lately (ended_at).
-- +goose Up
CREATE TABLE sessions (
    id           varchar(32) NOT NULL,
    public_id    varchar(32) NOT NULL,
    user_id      bigint      NOT NULL,
    browser      varchar(64) NOT NULL,
    system       varchar(64) NOT NULL,
    ip           varchar(64) NOT NULL,
    created_at   timestamptz NOT NULL,
    last_seen_at timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    ended_at     timestamptz,
    PRIMARY KEY (id)
);
CREATE UNIQUE INDEX idx_sessions_public_id ON sessions (public_id);
CREATE INDEX idx_sessions_user_id ON sessions (user_id);
CREATE INDEX idx_sessions_ended_at ON sessions (ended_at);
-- +goose Down
DROP TABLE sessions;
