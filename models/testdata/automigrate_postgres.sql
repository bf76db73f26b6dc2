-- The schema that GORM's AutoMigrate of models.All() (plus the lower(username) index) made on PostgreSQL
-- before migrations were versioned: pg_dump --schema-only of a schema it migrated, with the schema name,
-- SET lines and owners taken out. The upgrade tests start from it; never edit it by hand.

CREATE TABLE activities (
    id bigint NOT NULL,
    merchant_id bigint NOT NULL,
    name character varying(200) NOT NULL,
    description text DEFAULT ''::text NOT NULL,
    starts_at timestamp with time zone NOT NULL,
    ends_at timestamp with time zone NOT NULL,
    state character varying(20) DEFAULT 'draft'::character varying NOT NULL,
    sale_mode character varying(16) DEFAULT 'first_come'::character varying NOT NULL,
    queue_opens_at timestamp with time zone,
    paused_at timestamp with time zone,
    ended_early boolean DEFAULT false NOT NULL,
    stop_reason text DEFAULT ''::text NOT NULL,
    reviewer_id bigint,
    review_reason text DEFAULT ''::text NOT NULL,
    reviewed_at timestamp with time zone,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL
);

CREATE SEQUENCE activities_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE activities_id_seq OWNED BY activities.id;

CREATE TABLE addresses (
    id bigint NOT NULL,
    user_id bigint NOT NULL,
    recipient character varying(200) NOT NULL,
    phone character varying(80) NOT NULL,
    region character varying(200) NOT NULL,
    city character varying(200) NOT NULL,
    street character varying(800) NOT NULL,
    postcode character varying(64) NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL
);

CREATE SEQUENCE addresses_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE addresses_id_seq OWNED BY addresses.id;

CREATE TABLE audit_logs (
    id bigint NOT NULL,
    actor_id bigint NOT NULL,
    actor character varying(32) NOT NULL,
    action character varying(40) NOT NULL,
    target character varying(60) NOT NULL,
    before text DEFAULT ''::text NOT NULL,
    after text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone NOT NULL
);

CREATE SEQUENCE audit_logs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE audit_logs_id_seq OWNED BY audit_logs.id;

CREATE TABLE images (
    name character varying(48) NOT NULL,
    data bytea NOT NULL,
    created_at timestamp with time zone NOT NULL
);

CREATE TABLE items (
    id bigint NOT NULL,
    activity_id bigint NOT NULL,
    name character varying(200) NOT NULL,
    title character varying(200) DEFAULT ''::character varying NOT NULL,
    description text DEFAULT ''::text NOT NULL,
    image_url character varying(500) DEFAULT ''::character varying NOT NULL,
    image_key character varying(32) DEFAULT ''::character varying NOT NULL,
    original_price_cents bigint NOT NULL,
    seckill_price_cents bigint NOT NULL,
    stock_total bigint NOT NULL,
    stock_sold bigint DEFAULT 0 NOT NULL,
    stock_shards bigint DEFAULT 1 NOT NULL,
    version bigint DEFAULT 0 NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL
);

CREATE SEQUENCE items_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE items_id_seq OWNED BY items.id;

CREATE TABLE orders (
    id bigint NOT NULL,
    order_no character varying(32) NOT NULL,
    user_id bigint NOT NULL,
    item_id bigint NOT NULL,
    activity_id bigint NOT NULL,
    price_cents bigint NOT NULL,
    status character varying(20) NOT NULL,
    pay_deadline timestamp with time zone NOT NULL,
    paid_at timestamp with time zone,
    cancelled_at timestamp with time zone,
    address text,
    shipped_at timestamp with time zone,
    carrier character varying(200) DEFAULT ''::character varying NOT NULL,
    tracking_no character varying(64) DEFAULT ''::character varying NOT NULL,
    refunded_at timestamp with time zone,
    refund_reason text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL
);

CREATE SEQUENCE orders_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE orders_id_seq OWNED BY orders.id;

CREATE TABLE payments (
    id bigint NOT NULL,
    order_id bigint NOT NULL,
    order_no character varying(32) NOT NULL,
    provider_id character varying(64) NOT NULL,
    status character varying(16) NOT NULL,
    amount_cents bigint NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL
);

CREATE SEQUENCE payments_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE payments_id_seq OWNED BY payments.id;

CREATE TABLE purchases (
    id bigint NOT NULL,
    user_id bigint NOT NULL,
    item_id bigint NOT NULL,
    order_no character varying(32) NOT NULL,
    created_at timestamp with time zone NOT NULL
);

CREATE SEQUENCE purchases_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE purchases_id_seq OWNED BY purchases.id;

CREATE TABLE refunds (
    id bigint NOT NULL,
    order_id bigint NOT NULL,
    order_no character varying(32) NOT NULL,
    payment_id bigint NOT NULL,
    provider_id character varying(64) NOT NULL,
    amount_cents bigint NOT NULL,
    kind character varying(16) NOT NULL,
    reason text DEFAULT ''::text NOT NULL,
    status character varying(16) NOT NULL,
    attempts bigint DEFAULT 0 NOT NULL,
    last_error text DEFAULT ''::text NOT NULL,
    requested_by bigint,
    done_at timestamp with time zone,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL
);

CREATE SEQUENCE refunds_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE refunds_id_seq OWNED BY refunds.id;

CREATE TABLE stock_logs (
    id bigint NOT NULL,
    order_no character varying(32) NOT NULL,
    kind character varying(16) NOT NULL,
    item_id bigint NOT NULL,
    stock_before bigint NOT NULL,
    stock_after bigint NOT NULL,
    pending boolean DEFAULT false NOT NULL,
    created_at timestamp with time zone NOT NULL
);

CREATE SEQUENCE stock_logs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE stock_logs_id_seq OWNED BY stock_logs.id;

CREATE TABLE users (
    id bigint NOT NULL,
    username character varying(32) NOT NULL,
    password_hash character varying(100) NOT NULL,
    role character varying(16) DEFAULT 'shopper'::character varying NOT NULL,
    session_version bigint DEFAULT 1 NOT NULL,
    auth_changed_at timestamp with time zone,
    blocked_at timestamp with time zone,
    block_reason text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    updated_at timestamp with time zone NOT NULL
);

CREATE SEQUENCE users_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE users_id_seq OWNED BY users.id;

ALTER TABLE ONLY activities ALTER COLUMN id SET DEFAULT nextval('activities_id_seq'::regclass);

ALTER TABLE ONLY addresses ALTER COLUMN id SET DEFAULT nextval('addresses_id_seq'::regclass);

ALTER TABLE ONLY audit_logs ALTER COLUMN id SET DEFAULT nextval('audit_logs_id_seq'::regclass);

ALTER TABLE ONLY items ALTER COLUMN id SET DEFAULT nextval('items_id_seq'::regclass);

ALTER TABLE ONLY orders ALTER COLUMN id SET DEFAULT nextval('orders_id_seq'::regclass);

ALTER TABLE ONLY payments ALTER COLUMN id SET DEFAULT nextval('payments_id_seq'::regclass);

ALTER TABLE ONLY purchases ALTER COLUMN id SET DEFAULT nextval('purchases_id_seq'::regclass);

ALTER TABLE ONLY refunds ALTER COLUMN id SET DEFAULT nextval('refunds_id_seq'::regclass);

ALTER TABLE ONLY stock_logs ALTER COLUMN id SET DEFAULT nextval('stock_logs_id_seq'::regclass);

ALTER TABLE ONLY users ALTER COLUMN id SET DEFAULT nextval('users_id_seq'::regclass);

ALTER TABLE ONLY activities
    ADD CONSTRAINT activities_pkey PRIMARY KEY (id);

ALTER TABLE ONLY addresses
    ADD CONSTRAINT addresses_pkey PRIMARY KEY (id);

ALTER TABLE ONLY audit_logs
    ADD CONSTRAINT audit_logs_pkey PRIMARY KEY (id);

ALTER TABLE ONLY images
    ADD CONSTRAINT images_pkey PRIMARY KEY (name);

ALTER TABLE ONLY items
    ADD CONSTRAINT items_pkey PRIMARY KEY (id);

ALTER TABLE ONLY orders
    ADD CONSTRAINT orders_pkey PRIMARY KEY (id);

ALTER TABLE ONLY payments
    ADD CONSTRAINT payments_pkey PRIMARY KEY (id);

ALTER TABLE ONLY purchases
    ADD CONSTRAINT purchases_pkey PRIMARY KEY (id);

ALTER TABLE ONLY refunds
    ADD CONSTRAINT refunds_pkey PRIMARY KEY (id);

ALTER TABLE ONLY stock_logs
    ADD CONSTRAINT stock_logs_pkey PRIMARY KEY (id);

ALTER TABLE ONLY users
    ADD CONSTRAINT users_pkey PRIMARY KEY (id);

CREATE INDEX idx_activities_ends_at ON activities USING btree (ends_at);

CREATE INDEX idx_activities_merchant_id ON activities USING btree (merchant_id);

CREATE INDEX idx_activities_starts_at ON activities USING btree (starts_at);

CREATE INDEX idx_activities_state ON activities USING btree (state);

CREATE INDEX idx_addresses_user_id ON addresses USING btree (user_id);

CREATE INDEX idx_audit_logs_actor_id ON audit_logs USING btree (actor_id);

CREATE INDEX idx_audit_logs_created_at ON audit_logs USING btree (created_at);

CREATE INDEX idx_audit_logs_target ON audit_logs USING btree (target);

CREATE INDEX idx_items_activity_id ON items USING btree (activity_id);

CREATE INDEX idx_orders_activity_id ON orders USING btree (activity_id);

CREATE INDEX idx_orders_item_id ON orders USING btree (item_id);

CREATE UNIQUE INDEX idx_orders_order_no ON orders USING btree (order_no);

CREATE INDEX idx_orders_pay_deadline ON orders USING btree (pay_deadline);

CREATE INDEX idx_orders_status ON orders USING btree (status);

CREATE INDEX idx_orders_user_id ON orders USING btree (user_id);

CREATE INDEX idx_payments_order_id ON payments USING btree (order_id);

CREATE INDEX idx_payments_order_no ON payments USING btree (order_no);

CREATE UNIQUE INDEX idx_payments_provider_id ON payments USING btree (provider_id);

CREATE INDEX idx_payments_status ON payments USING btree (status);

CREATE UNIQUE INDEX idx_purchase_user_item ON purchases USING btree (user_id, item_id);

CREATE UNIQUE INDEX idx_purchases_order_no ON purchases USING btree (order_no);

CREATE INDEX idx_refunds_order_id ON refunds USING btree (order_id);

CREATE INDEX idx_refunds_order_no ON refunds USING btree (order_no);

CREATE UNIQUE INDEX idx_refunds_payment_id ON refunds USING btree (payment_id);

CREATE INDEX idx_refunds_status ON refunds USING btree (status);

CREATE UNIQUE INDEX idx_stock_log_order_kind ON stock_logs USING btree (order_no, kind);

CREATE INDEX idx_stock_logs_item_id ON stock_logs USING btree (item_id);

CREATE INDEX idx_stock_logs_pending ON stock_logs USING btree (pending);

CREATE INDEX idx_users_auth_changed_at ON users USING btree (auth_changed_at);

CREATE UNIQUE INDEX idx_users_username ON users USING btree (username);

CREATE UNIQUE INDEX idx_users_username_lower ON users USING btree (lower((username)::text));

ALTER TABLE ONLY items
    ADD CONSTRAINT fk_activities_items FOREIGN KEY (activity_id) REFERENCES activities(id) ON DELETE CASCADE;

