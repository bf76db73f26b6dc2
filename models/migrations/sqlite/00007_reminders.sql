-- Reminders: a shopper with a verified e-mail asks to be mailed when an approved sale's line opens and a
-- few minutes before it starts. One row a (user, sale), in the language the shopper used when asking;
-- what was sent is marked in the transaction that queues the mail, so that no reminder goes twice.
-- +goose Up
CREATE TABLE reminders (
    id                integer PRIMARY KEY AUTOINCREMENT,
    user_id           integer     NOT NULL,
    activity_id       integer     NOT NULL,
    lang              text        NOT NULL,
    line_open_sent_at datetime,
    start_sent_at     datetime,
    created_at        datetime    NOT NULL
);
CREATE UNIQUE INDEX idx_reminders_user_activity ON reminders (user_id, activity_id);
CREATE INDEX idx_reminders_activity_id ON reminders (activity_id);
-- A reminder's unsubscribe link, sent as its List-Unsubscribe header.
ALTER TABLE mails ADD COLUMN list_unsubscribe text NOT NULL DEFAULT '';
-- +goose Down
ALTER TABLE mails DROP COLUMN list_unsubscribe;
DROP TABLE reminders;
