-- The admins' search: orders by status, sale and date, and the audit log by who, what, on what and when,
-- each paged in the database newest first (the PostgreSQL file says why each index). The demo's SQLite
-- finds part of a buyer's name by reading the users table: it has no trigram index, and the demo is small.
-- +goose Up
CREATE INDEX idx_orders_created_at ON orders (created_at);
CREATE INDEX idx_orders_user_created ON orders (user_id, created_at);
CREATE INDEX idx_orders_status_created ON orders (status, created_at);
CREATE INDEX idx_orders_activity_created ON orders (activity_id, created_at);
-- The composites lead with what the single-column indexes held, and serve their lookups: those go, so
-- that an order's insert, the sale's hot path, writes one index more than before, not four.
DROP INDEX idx_orders_user_id;
DROP INDEX idx_orders_activity_id;
DROP INDEX idx_orders_status;
CREATE INDEX idx_audit_logs_actor_created ON audit_logs (actor_id, created_at);
CREATE INDEX idx_audit_logs_action_created ON audit_logs (action, created_at);
CREATE INDEX idx_audit_logs_target_created ON audit_logs (target, created_at);
-- +goose Down
CREATE INDEX idx_orders_status ON orders (status);
CREATE INDEX idx_orders_activity_id ON orders (activity_id);
CREATE INDEX idx_orders_user_id ON orders (user_id);
DROP INDEX idx_audit_logs_target_created;
DROP INDEX idx_audit_logs_action_created;
DROP INDEX idx_audit_logs_actor_created;
DROP INDEX idx_orders_activity_created;
DROP INDEX idx_orders_status_created;
DROP INDEX idx_orders_user_created;
DROP INDEX idx_orders_created_at;
