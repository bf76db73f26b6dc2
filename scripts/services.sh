#!/usr/bin/env bash
# Brings up what the tests use: PostgreSQL and Redis (started when installed and down, installed with apt
# when missing, with the test database created) and Debian's Chromium for the browser tests (installed
# when missing; never a downloaded browser). With REQUIRE_SERVICES=1
# (as in CI) it fails when either cannot be reached; without it, it warns and the tests say the rest.
set -uo pipefail

PG_HOST=127.0.0.1 PG_PORT=5432 PG_DB=test
REDIS_HOST=127.0.0.1 REDIS_PORT=6379

say() { printf 'services: %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else say "need root for: $*"; return 1; fi; }
as_postgres() { if [ "$(id -u)" = 0 ]; then su postgres -c "$1"; else sudo -u postgres sh -c "$1"; fi; }

apt_updated=0
apt_install() {
  if [ "$apt_updated" = 0 ]; then as_root apt-get update -qq && apt_updated=1; fi
  say "installing $*"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

wait_for() { # wait_for SECONDS COMMAND...
  local n=$(( $1 * 5 )); shift
  for _ in $(seq "$n"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  return 1
}

pg_up() { pg_isready -h "$PG_HOST" -p "$PG_PORT" -q; }
redis_up() { [ "$(redis-cli -h "$REDIS_HOST" -p "$REDIS_PORT" ping 2>/dev/null)" = PONG ]; }

start_postgres() {
  command -v pg_isready >/dev/null 2>&1 && pg_up && return 0
  if ! ls /etc/postgresql/*/main >/dev/null 2>&1; then apt_install postgresql postgresql-client || return 1; fi
  local version
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  say "starting PostgreSQL $version"
  as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  wait_for 30 pg_up
}

# The tests connect as postgres over TCP. The machines here trust local connections; a fresh Debian
# install asks for a password, so the postgres user gets the password "postgres" (for local tests only).
prepare_postgres() {
  local url="postgres://postgres:postgres@$PG_HOST:$PG_PORT/postgres?sslmode=disable"
  if ! psql "$url" -tAc 'SELECT 1' >/dev/null 2>&1; then
    say "setting the local postgres user's password for the tests"
    as_postgres "psql -qc \"ALTER USER postgres PASSWORD 'postgres'\"" >/dev/null || return 1
  fi
  if [ "$(psql "$url" -tAc "SELECT 1 FROM pg_database WHERE datname = '$PG_DB'")" != 1 ]; then
    say "creating database $PG_DB"
    psql "$url" -qc "CREATE DATABASE $PG_DB" || return 1
  fi
}

start_redis() {
  command -v redis-cli >/dev/null 2>&1 && redis_up && return 0
  command -v redis-server >/dev/null 2>&1 || apt_install redis-server || return 1
  say "starting Redis"
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port "$REDIS_PORT" --save "" --appendonly no >/dev/null
  wait_for 15 redis_up
}

failed=0
# Tests pointed at other servers (TEST_DATABASE_URL, TEST_REDIS_URL) need nothing started here.
if [ -z "${TEST_DATABASE_URL:-}" ]; then
  if start_postgres && prepare_postgres; then say "PostgreSQL is up on $PG_HOST:$PG_PORT, database $PG_DB"
  else say "PostgreSQL is NOT reachable on $PG_HOST:$PG_PORT"; failed=1; fi
fi
if [ -z "${TEST_REDIS_URL:-}" ]; then
  if start_redis; then say "Redis is up on $REDIS_HOST:$REDIS_PORT"
  else say "Redis is NOT reachable on $REDIS_HOST:$REDIS_PORT"; failed=1; fi
fi
if [ -z "${CHROMIUM:-}" ] && ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  if apt_install chromium; then say "Chromium installed"
  else say "Chromium is NOT installed (the browser tests need it: apt-get install -y chromium)"; failed=1; fi
fi
if [ "$failed" = 1 ] && [ "${REQUIRE_SERVICES:-}" = 1 ]; then exit 1; fi
exit 0
