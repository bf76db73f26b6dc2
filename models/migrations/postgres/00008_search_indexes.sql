-- The admins' search: orders by buyer (part of a name), status, sale and date, and the audit log by who,
-- what, on what and when, each paged in the database newest first. Every filter leads an index whose
-- second column is the time the pages sort by, so that a page reads only its own rows.
-- Part of a name is found through pg_trgm: a trigram index on usernames serves ILIKE '%part%'. The
-- extension lives in public (one per database, whatever schema the shop's tables are in) and is named
-- with it; pg_trgm is a trusted extension, so the database's owner may create it.
-- The indexes are built in the migration's transaction, not CONCURRENTLY: a concurrent build waits for
-- every older transaction of the whole database, so that every test's schema (and any shop's second
-- schema) would wait for the others' long transactions past the lock timeout. A plain build keeps
-- orders from being written while it runs (longer, the more orders there are): a large shop builds them
-- beforehand, at a quiet moment, with the same statements made CREATE INDEX CONCURRENTLY (one at a time,
-- outside a transaction), and this migration then finds them (IF NOT EXISTS) and only drops the three
-- single-column indexes the composites replace (quick: a drop does not read the table).
-- +goose Up
-- +goose StatementBegin
DO $$ BEGIN
    CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;
EXCEPTION WHEN unique_violation OR duplicate_object THEN NULL; -- another schema's migration made it meanwhile
END $$;
-- +goose StatementEnd
CREATE INDEX IF NOT EXISTS idx_users_username_trgm ON users USING gin (username public.gin_trgm_ops);
CREATE INDEX IF NOT EXISTS idx_orders_created_at ON orders (created_at);
CREATE INDEX IF NOT EXISTS idx_orders_user_created ON orders (user_id, created_at);
CREATE INDEX IF NOT EXISTS idx_orders_status_created ON orders (status, created_at);
CREATE INDEX IF NOT EXISTS idx_orders_activity_created ON orders (activity_id, created_at);
-- The composites lead with what the single-column indexes held, and serve their lookups: those go, so
-- that an order's insert, the sale's hot path, writes one index more than before, not four.
DROP INDEX IF EXISTS idx_orders_user_id;
DROP INDEX IF EXISTS idx_orders_activity_id;
DROP INDEX IF EXISTS idx_orders_status;
CREATE INDEX IF NOT EXISTS idx_audit_logs_actor_created ON audit_logs (actor_id, created_at);
CREATE INDEX IF NOT EXISTS idx_audit_logs_action_created ON audit_logs (action, created_at);
CREATE INDEX IF NOT EXISTS idx_audit_logs_target_created ON audit_logs (target, created_at);
-- +goose Down
CREATE INDEX IF NOT EXISTS idx_orders_status ON orders (status);
CREATE INDEX IF NOT EXISTS idx_orders_activity_id ON orders (activity_id);
CREATE INDEX IF NOT EXISTS idx_orders_user_id ON orders (user_id);
DROP INDEX IF EXISTS idx_audit_logs_target_created;
DROP INDEX IF EXISTS idx_audit_logs_action_created;
DROP INDEX IF EXISTS idx_audit_logs_actor_created;
DROP INDEX IF EXISTS idx_orders_activity_created;
DROP INDEX IF EXISTS idx_orders_status_created;
DROP INDEX IF EXISTS idx_orders_user_created;
DROP INDEX IF EXISTS idx_orders_created_at;
DROP INDEX IF EXISTS idx_users_username_trgm;
