-- E-mail: an optional address on each account (lowercased, one account an address) and when it was
-- verified; the single-use tokens mailed to verify it or to reset a password (only their hashes); and the
-- mail queue, sent by the worker (mail.Queue) at least once, each mail with its Message-ID.
-- +goose Up
ALTER TABLE users ADD COLUMN email text;
ALTER TABLE users ADD COLUMN email_verified_at datetime;
CREATE UNIQUE INDEX idx_users_email ON users (email);
CREATE TABLE mails (
    id            integer PRIMARY KEY AUTOINCREMENT,
    message_id    text NOT NULL,
    kind          text  NOT NULL,
    user_id       integer,
    to_addr       text NOT NULL,
    lang          text   NOT NULL,
    subject       text NOT NULL,
    text_body     text         NOT NULL,
    html_body     text         NOT NULL,
    state         text  NOT NULL,
    next_at       datetime  NOT NULL,
    attempts      integer       NOT NULL DEFAULT 0,
    claimed_until datetime,
    last_error    text         NOT NULL DEFAULT '',
    sent_at       datetime,
    created_at    datetime  NOT NULL,
    updated_at    datetime  NOT NULL
);
CREATE UNIQUE INDEX idx_mails_message_id ON mails (message_id);
CREATE INDEX idx_mails_user_id ON mails (user_id);
CREATE INDEX idx_mails_due ON mails (state, next_at);
CREATE INDEX idx_mails_created_at ON mails (created_at);
CREATE TABLE tokens (
    id         integer PRIMARY KEY AUTOINCREMENT,
    user_id    integer       NOT NULL,
    purpose    text  NOT NULL,
    hash       text  NOT NULL,
    email      text NOT NULL DEFAULT '',
    expires_at datetime  NOT NULL,
    used_at    datetime,
    created_at datetime  NOT NULL
);
CREATE INDEX idx_tokens_user_id ON tokens (user_id);
CREATE UNIQUE INDEX idx_tokens_hash ON tokens (hash);
-- +goose Down
DROP TABLE tokens;
DROP TABLE mails;
DROP INDEX idx_users_email;
ALTER TABLE users DROP COLUMN email_verified_at;
ALTER TABLE users DROP COLUMN email;
