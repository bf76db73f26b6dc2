-- The admins' search: orders by buyer (part of a name), status, sale and date, and the audit log by who,
-- what, on what and when, each paged in the database newest first. Every filter leads an index whose
-- second column is the time the pages sort by, so that a page reads only its own rows.
-- Part of a name is found through pg_trgm: a trigram index on usernames serves ILIKE '%part%'. The
-- extension lives in public (one per database, whatever schema the shop's tables are in) and is named
-- with it; pg_trgm is a trusted extension, so the database's owner may create it.
-- The indexes are built CONCURRENTLY (orders and audit_logs of a live shop are large and written to),
-- hence outside a transaction. Each statement says IF NOT EXISTS: a build that failed leaves an INVALID
-- index to drop (DROP INDEX CONCURRENTLY) before running this again.
-- +goose NO TRANSACTION
-- +goose Up
-- +goose StatementBegin
DO $$ BEGIN
    CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;
EXCEPTION WHEN unique_violation OR duplicate_object THEN NULL; -- another schema's migration made it meanwhile
END $$;
-- +goose StatementEnd
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_users_username_trgm ON users USING gin (username public.gin_trgm_ops);
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_orders_created_at ON orders (created_at);
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_orders_user_created ON orders (user_id, created_at);
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_orders_status_created ON orders (status, created_at);
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_orders_activity_created ON orders (activity_id, created_at);
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_audit_logs_actor_created ON audit_logs (actor_id, created_at);
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_audit_logs_action_created ON audit_logs (action, created_at);
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_audit_logs_target_created ON audit_logs (target, created_at);
-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS idx_audit_logs_target_created;
DROP INDEX CONCURRENTLY IF EXISTS idx_audit_logs_action_created;
DROP INDEX CONCURRENTLY IF EXISTS idx_audit_logs_actor_created;
DROP INDEX CONCURRENTLY IF EXISTS idx_orders_activity_created;
DROP INDEX CONCURRENTLY IF EXISTS idx_orders_status_created;
DROP INDEX CONCURRENTLY IF EXISTS idx_orders_user_created;
DROP INDEX CONCURRENTLY IF EXISTS idx_orders_created_at;
DROP INDEX CONCURRENTLY IF EXISTS idx_users_username_trgm;
