-- E-mail: an optional address on each account (lowercased, one account an address) and when it was
-- verified; the single-use tokens mailed to verify it or to reset a password (only their hashes); and the
-- mail queue, sent by the worker (mail.Queue) at least once, each mail with its Message-ID.
-- The users index is built in the transaction: the column is new and NULL everywhere, so the build reads
-- the table once and writes almost nothing (a few seconds for millions of accounts, writes to users wait).
-- +goose Up
ALTER TABLE users ADD COLUMN email varchar(254);
ALTER TABLE users ADD COLUMN email_verified_at timestamptz;
CREATE UNIQUE INDEX idx_users_email ON users (email);
CREATE TABLE mails (
    id            bigserial PRIMARY KEY,
    message_id    varchar(200) NOT NULL,
    kind          varchar(32)  NOT NULL,
    user_id       bigint,
    to_addr       varchar(254) NOT NULL,
    lang          varchar(8)   NOT NULL,
    subject       varchar(300) NOT NULL,
    text_body     text         NOT NULL,
    html_body     text         NOT NULL,
    state         varchar(16)  NOT NULL,
    next_at       timestamptz  NOT NULL,
    attempts      bigint       NOT NULL DEFAULT 0,
    claimed_until timestamptz,
    last_error    text         NOT NULL DEFAULT '',
    sent_at       timestamptz,
    created_at    timestamptz  NOT NULL,
    updated_at    timestamptz  NOT NULL
);
CREATE UNIQUE INDEX idx_mails_message_id ON mails (message_id);
CREATE INDEX idx_mails_user_id ON mails (user_id);
CREATE INDEX idx_mails_due ON mails (state, next_at);
CREATE INDEX idx_mails_created_at ON mails (created_at);
CREATE TABLE tokens (
    id         bigserial PRIMARY KEY,
    user_id    bigint       NOT NULL,
    purpose    varchar(16)  NOT NULL,
    hash       varchar(64)  NOT NULL,
    email      varchar(254) NOT NULL DEFAULT '',
    expires_at timestamptz  NOT NULL,
    used_at    timestamptz,
    created_at timestamptz  NOT NULL
);
CREATE INDEX idx_tokens_user_id ON tokens (user_id);
CREATE UNIQUE INDEX idx_tokens_hash ON tokens (hash);
-- +goose Down
DROP TABLE tokens;
DROP TABLE mails;
DROP INDEX idx_users_email;
ALTER TABLE users DROP COLUMN email_verified_at;
ALTER TABLE users DROP COLUMN email;
