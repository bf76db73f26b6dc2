-- The schema as GORM's AutoMigrate of models.All() made it on the demo's SQLite when migrations became
-- versioned (read back with sqlite3's .schema and written out by hand). A database made by that
-- AutoMigrate has no goose_db_version table: Migrate recognises it and marks it at this version without
-- running it. GORM wrote string defaults in double quotes ("shopper"), which SQLite reads as the same string.

-- +goose Up
CREATE TABLE users (
    id              integer PRIMARY KEY AUTOINCREMENT,
    username        text     NOT NULL,
    password_hash   text     NOT NULL,
    role            text     NOT NULL DEFAULT 'shopper',
    session_version integer  NOT NULL DEFAULT 1,
    auth_changed_at datetime,
    blocked_at      datetime,
    block_reason    text     NOT NULL DEFAULT '',
    created_at      datetime NOT NULL,
    updated_at      datetime NOT NULL
);
CREATE UNIQUE INDEX idx_users_username ON users (username);
-- Usernames are unique ignoring case (ADA is taken when ada is).
CREATE UNIQUE INDEX idx_users_username_lower ON users (lower(username));
CREATE INDEX idx_users_auth_changed_at ON users (auth_changed_at);

CREATE TABLE activities (
    id             integer PRIMARY KEY AUTOINCREMENT,
    merchant_id    integer  NOT NULL,
    name           text     NOT NULL,
    description    text     NOT NULL DEFAULT '',
    starts_at      datetime NOT NULL,
    ends_at        datetime NOT NULL,
    state          text     NOT NULL DEFAULT 'draft',
    sale_mode      text     NOT NULL DEFAULT 'first_come',
    queue_opens_at datetime,
    paused_at      datetime,
    ended_early    numeric  NOT NULL DEFAULT false,
    stop_reason    text     NOT NULL DEFAULT '',
    reviewer_id    integer,
    review_reason  text     NOT NULL DEFAULT '',
    reviewed_at    datetime,
    created_at     datetime NOT NULL,
    updated_at     datetime NOT NULL
);
CREATE INDEX idx_activities_merchant_id ON activities (merchant_id);
CREATE INDEX idx_activities_starts_at ON activities (starts_at);
CREATE INDEX idx_activities_ends_at ON activities (ends_at);
CREATE INDEX idx_activities_state ON activities (state);

CREATE TABLE items (
    id                   integer PRIMARY KEY AUTOINCREMENT,
    activity_id          integer  NOT NULL,
    name                 text     NOT NULL,
    title                text     NOT NULL DEFAULT '',
    description          text     NOT NULL DEFAULT '',
    image_url            text     NOT NULL DEFAULT '',
    image_key            text     NOT NULL DEFAULT '',
    original_price_cents integer  NOT NULL,
    seckill_price_cents  integer  NOT NULL,
    stock_total          integer  NOT NULL,
    stock_sold           integer  NOT NULL DEFAULT 0,
    stock_shards         integer  NOT NULL DEFAULT 1,
    version              integer  NOT NULL DEFAULT 0,
    created_at           datetime NOT NULL,
    updated_at           datetime NOT NULL,
    CONSTRAINT fk_activities_items FOREIGN KEY (activity_id) REFERENCES activities (id) ON DELETE CASCADE
);
CREATE INDEX idx_items_activity_id ON items (activity_id);

CREATE TABLE orders (
    id            integer PRIMARY KEY AUTOINCREMENT,
    order_no      text     NOT NULL,
    user_id       integer  NOT NULL,
    item_id       integer  NOT NULL,
    activity_id   integer  NOT NULL,
    price_cents   integer  NOT NULL,
    status        text     NOT NULL,
    pay_deadline  datetime NOT NULL,
    paid_at       datetime,
    cancelled_at  datetime,
    address       text,
    shipped_at    datetime,
    carrier       text     NOT NULL DEFAULT '',
    tracking_no   text     NOT NULL DEFAULT '',
    refunded_at   datetime,
    refund_reason text     NOT NULL DEFAULT '',
    created_at    datetime NOT NULL,
    updated_at    datetime NOT NULL
);
CREATE UNIQUE INDEX idx_orders_order_no ON orders (order_no);
CREATE INDEX idx_orders_user_id ON orders (user_id);
CREATE INDEX idx_orders_item_id ON orders (item_id);
CREATE INDEX idx_orders_activity_id ON orders (activity_id);
CREATE INDEX idx_orders_status ON orders (status);
CREATE INDEX idx_orders_pay_deadline ON orders (pay_deadline);

CREATE TABLE stock_logs (
    id           integer PRIMARY KEY AUTOINCREMENT,
    order_no     text     NOT NULL,
    kind         text     NOT NULL,
    item_id      integer  NOT NULL,
    stock_before integer  NOT NULL,
    stock_after  integer  NOT NULL,
    pending      numeric  NOT NULL DEFAULT false,
    created_at   datetime NOT NULL
);
-- One row per (order, kind): a message delivered twice or a cancel run twice cannot log twice.
CREATE UNIQUE INDEX idx_stock_log_order_kind ON stock_logs (order_no, kind);
CREATE INDEX idx_stock_logs_item_id ON stock_logs (item_id);
CREATE INDEX idx_stock_logs_pending ON stock_logs (pending);

CREATE TABLE purchases (
    id         integer PRIMARY KEY AUTOINCREMENT,
    user_id    integer  NOT NULL,
    item_id    integer  NOT NULL,
    order_no   text     NOT NULL,
    created_at datetime NOT NULL
);
-- The database's own line of defence against a second order of one item by one user.
CREATE UNIQUE INDEX idx_purchase_user_item ON purchases (user_id, item_id);
CREATE UNIQUE INDEX idx_purchases_order_no ON purchases (order_no);

CREATE TABLE payments (
    id           integer PRIMARY KEY AUTOINCREMENT,
    order_id     integer  NOT NULL,
    order_no     text     NOT NULL,
    provider_id  text     NOT NULL,
    status       text     NOT NULL,
    amount_cents integer  NOT NULL,
    created_at   datetime NOT NULL,
    updated_at   datetime NOT NULL
);
CREATE INDEX idx_payments_order_id ON payments (order_id);
CREATE INDEX idx_payments_order_no ON payments (order_no);
CREATE UNIQUE INDEX idx_payments_provider_id ON payments (provider_id);
CREATE INDEX idx_payments_status ON payments (status);

CREATE TABLE audit_logs (
    id         integer PRIMARY KEY AUTOINCREMENT,
    actor_id   integer  NOT NULL,
    actor      text     NOT NULL,
    action     text     NOT NULL,
    target     text     NOT NULL,
    before     text     NOT NULL DEFAULT '',
    after      text     NOT NULL DEFAULT '',
    created_at datetime NOT NULL
);
CREATE INDEX idx_audit_logs_actor_id ON audit_logs (actor_id);
CREATE INDEX idx_audit_logs_target ON audit_logs (target);
CREATE INDEX idx_audit_logs_created_at ON audit_logs (created_at);

CREATE TABLE addresses (
    id         integer PRIMARY KEY AUTOINCREMENT,
    user_id    integer  NOT NULL,
    recipient  text     NOT NULL,
    phone      text     NOT NULL,
    region     text     NOT NULL,
    city       text     NOT NULL,
    street     text     NOT NULL,
    postcode   text     NOT NULL,
    created_at datetime NOT NULL,
    updated_at datetime NOT NULL
);
CREATE INDEX idx_addresses_user_id ON addresses (user_id);

CREATE TABLE refunds (
    id           integer PRIMARY KEY AUTOINCREMENT,
    order_id     integer  NOT NULL,
    order_no     text     NOT NULL,
    payment_id   integer  NOT NULL,
    provider_id  text     NOT NULL,
    amount_cents integer  NOT NULL,
    kind         text     NOT NULL,
    reason       text     NOT NULL DEFAULT '',
    status       text     NOT NULL,
    attempts     integer  NOT NULL DEFAULT 0,
    last_error   text     NOT NULL DEFAULT '',
    requested_by integer,
    done_at      datetime,
    created_at   datetime NOT NULL,
    updated_at   datetime NOT NULL
);
CREATE INDEX idx_refunds_order_id ON refunds (order_id);
CREATE INDEX idx_refunds_order_no ON refunds (order_no);
CREATE UNIQUE INDEX idx_refunds_payment_id ON refunds (payment_id);
CREATE INDEX idx_refunds_status ON refunds (status);

CREATE TABLE images (
    name       text,
    data       blob     NOT NULL,
    created_at datetime NOT NULL,
    PRIMARY KEY (name)
);

-- +goose Down
DROP TABLE images;
DROP TABLE refunds;
DROP TABLE addresses;
DROP TABLE audit_logs;
DROP TABLE payments;
DROP TABLE purchases;
DROP TABLE stock_logs;
DROP TABLE orders;
DROP TABLE items;
DROP TABLE activities;
DROP TABLE users;
