-- The schema as GORM's AutoMigrate of models.All() made it on PostgreSQL when migrations became versioned
-- (read back with pg_dump --schema-only and written out by hand). A database made by that AutoMigrate has
-- no goose_db_version table: Migrate recognises it and marks it at this version without running it.

-- +goose Up
CREATE TABLE users (
    id              bigserial PRIMARY KEY,
    username        varchar(32)  NOT NULL,
    password_hash   varchar(100) NOT NULL,
    role            varchar(16)  NOT NULL DEFAULT 'shopper',
    session_version bigint       NOT NULL DEFAULT 1,
    auth_changed_at timestamptz,
    blocked_at      timestamptz,
    block_reason    text         NOT NULL DEFAULT '',
    created_at      timestamptz  NOT NULL,
    updated_at      timestamptz  NOT NULL
);
CREATE UNIQUE INDEX idx_users_username ON users (username);
-- Usernames are unique ignoring case (ADA is taken when ada is).
CREATE UNIQUE INDEX idx_users_username_lower ON users (lower(username));
CREATE INDEX idx_users_auth_changed_at ON users (auth_changed_at);

CREATE TABLE activities (
    id             bigserial PRIMARY KEY,
    merchant_id    bigint       NOT NULL,
    name           varchar(200) NOT NULL,
    description    text         NOT NULL DEFAULT '',
    starts_at      timestamptz  NOT NULL,
    ends_at        timestamptz  NOT NULL,
    state          varchar(20)  NOT NULL DEFAULT 'draft',
    sale_mode      varchar(16)  NOT NULL DEFAULT 'first_come',
    queue_opens_at timestamptz,
    paused_at      timestamptz,
    ended_early    boolean      NOT NULL DEFAULT false,
    stop_reason    text         NOT NULL DEFAULT '',
    reviewer_id    bigint,
    review_reason  text         NOT NULL DEFAULT '',
    reviewed_at    timestamptz,
    created_at     timestamptz  NOT NULL,
    updated_at     timestamptz  NOT NULL
);
CREATE INDEX idx_activities_merchant_id ON activities (merchant_id);
CREATE INDEX idx_activities_starts_at ON activities (starts_at);
CREATE INDEX idx_activities_ends_at ON activities (ends_at);
CREATE INDEX idx_activities_state ON activities (state);

CREATE TABLE items (
    id                   bigserial PRIMARY KEY,
    activity_id          bigint       NOT NULL,
    name                 varchar(200) NOT NULL,
    title                varchar(200) NOT NULL DEFAULT '',
    description          text         NOT NULL DEFAULT '',
    image_url            varchar(500) NOT NULL DEFAULT '',
    image_key            varchar(32)  NOT NULL DEFAULT '',
    original_price_cents bigint       NOT NULL,
    seckill_price_cents  bigint       NOT NULL,
    stock_total          bigint       NOT NULL,
    stock_sold           bigint       NOT NULL DEFAULT 0,
    stock_shards         bigint       NOT NULL DEFAULT 1,
    version              bigint       NOT NULL DEFAULT 0,
    created_at           timestamptz  NOT NULL,
    updated_at           timestamptz  NOT NULL,
    CONSTRAINT fk_activities_items FOREIGN KEY (activity_id) REFERENCES activities (id) ON DELETE CASCADE
);
CREATE INDEX idx_items_activity_id ON items (activity_id);

CREATE TABLE orders (
    id            bigserial PRIMARY KEY,
    order_no      varchar(32)  NOT NULL,
    user_id       bigint       NOT NULL,
    item_id       bigint       NOT NULL,
    activity_id   bigint       NOT NULL,
    price_cents   bigint       NOT NULL,
    status        varchar(20)  NOT NULL,
    pay_deadline  timestamptz  NOT NULL,
    paid_at       timestamptz,
    cancelled_at  timestamptz,
    address       text,
    shipped_at    timestamptz,
    carrier       varchar(200) NOT NULL DEFAULT '',
    tracking_no   varchar(64)  NOT NULL DEFAULT '',
    refunded_at   timestamptz,
    refund_reason text         NOT NULL DEFAULT '',
    created_at    timestamptz  NOT NULL,
    updated_at    timestamptz  NOT NULL
);
CREATE UNIQUE INDEX idx_orders_order_no ON orders (order_no);
CREATE INDEX idx_orders_user_id ON orders (user_id);
CREATE INDEX idx_orders_item_id ON orders (item_id);
CREATE INDEX idx_orders_activity_id ON orders (activity_id);
CREATE INDEX idx_orders_status ON orders (status);
CREATE INDEX idx_orders_pay_deadline ON orders (pay_deadline);

CREATE TABLE stock_logs (
    id           bigserial PRIMARY KEY,
    order_no     varchar(32) NOT NULL,
    kind         varchar(16) NOT NULL,
    item_id      bigint      NOT NULL,
    stock_before bigint      NOT NULL,
    stock_after  bigint      NOT NULL,
    pending      boolean     NOT NULL DEFAULT false,
    created_at   timestamptz NOT NULL
);
-- One row per (order, kind): a message delivered twice or a cancel run twice cannot log twice.
CREATE UNIQUE INDEX idx_stock_log_order_kind ON stock_logs (order_no, kind);
CREATE INDEX idx_stock_logs_item_id ON stock_logs (item_id);
CREATE INDEX idx_stock_logs_pending ON stock_logs (pending);

CREATE TABLE purchases (
    id         bigserial PRIMARY KEY,
    user_id    bigint      NOT NULL,
    item_id    bigint      NOT NULL,
    order_no   varchar(32) NOT NULL,
    created_at timestamptz NOT NULL
);
-- The database's own line of defence against a second order of one item by one user.
CREATE UNIQUE INDEX idx_purchase_user_item ON purchases (user_id, item_id);
CREATE UNIQUE INDEX idx_purchases_order_no ON purchases (order_no);

CREATE TABLE payments (
    id           bigserial PRIMARY KEY,
    order_id     bigint      NOT NULL,
    order_no     varchar(32) NOT NULL,
    provider_id  varchar(64) NOT NULL,
    status       varchar(16) NOT NULL,
    amount_cents bigint      NOT NULL,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL
);
CREATE INDEX idx_payments_order_id ON payments (order_id);
CREATE INDEX idx_payments_order_no ON payments (order_no);
CREATE UNIQUE INDEX idx_payments_provider_id ON payments (provider_id);
CREATE INDEX idx_payments_status ON payments (status);

CREATE TABLE audit_logs (
    id         bigserial PRIMARY KEY,
    actor_id   bigint      NOT NULL,
    actor      varchar(32) NOT NULL,
    action     varchar(40) NOT NULL,
    target     varchar(60) NOT NULL,
    before     text        NOT NULL DEFAULT '',
    after      text        NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL
);
CREATE INDEX idx_audit_logs_actor_id ON audit_logs (actor_id);
CREATE INDEX idx_audit_logs_target ON audit_logs (target);
CREATE INDEX idx_audit_logs_created_at ON audit_logs (created_at);

CREATE TABLE addresses (
    id         bigserial PRIMARY KEY,
    user_id    bigint       NOT NULL,
    recipient  varchar(200) NOT NULL,
    phone      varchar(80)  NOT NULL,
    region     varchar(200) NOT NULL,
    city       varchar(200) NOT NULL,
    street     varchar(800) NOT NULL,
    postcode   varchar(64)  NOT NULL,
    created_at timestamptz  NOT NULL,
    updated_at timestamptz  NOT NULL
);
CREATE INDEX idx_addresses_user_id ON addresses (user_id);

CREATE TABLE refunds (
    id           bigserial PRIMARY KEY,
    order_id     bigint      NOT NULL,
    order_no     varchar(32) NOT NULL,
    payment_id   bigint      NOT NULL,
    provider_id  varchar(64) NOT NULL,
    amount_cents bigint      NOT NULL,
    kind         varchar(16) NOT NULL,
    reason       text        NOT NULL DEFAULT '',
    status       varchar(16) NOT NULL,
    attempts     bigint      NOT NULL DEFAULT 0,
    last_error   text        NOT NULL DEFAULT '',
    requested_by bigint,
    done_at      timestamptz,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL
);
CREATE INDEX idx_refunds_order_id ON refunds (order_id);
CREATE INDEX idx_refunds_order_no ON refunds (order_no);
CREATE UNIQUE INDEX idx_refunds_payment_id ON refunds (payment_id);
CREATE INDEX idx_refunds_status ON refunds (status);

CREATE TABLE images (
    name       varchar(48) PRIMARY KEY,
    data       bytea       NOT NULL,
    created_at timestamptz NOT NULL
);

-- +goose Down
DROP TABLE images, refunds, addresses, audit_logs, payments, purchases, stock_logs, orders, items, activities, users;
