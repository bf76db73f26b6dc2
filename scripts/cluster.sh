#!/usr/bin/env bash
# make cluster: several seckill instances on a Redis Cluster of three masters, a replica each, behind
# nginx, all on 127.0.0.1.
# The instances are the web tier (SERVE_ROLE=web) and a worker process apart writes the orders and runs
# the jobs (SERVE_ROLE=worker; docs/architecture.md says which runs where).
#
#   scripts/cluster.sh start        Redis Cluster (fresh each time), migrations, the accounts admin and
#                                   merchant, the instances, the workers, nginx; waits until each answers;
#                                   fails when the cluster already runs (stop it first)
#   scripts/cluster.sh stop         stops what start started (nginx, instances, workers, Redis nodes); safe
#                                   to repeat
#   scripts/cluster.sh status       what runs; exit 0 all of it, 1 some of it, 3 none of it
#   scripts/cluster.sh stop-app N   stops instance N (1-based) gracefully; nginx sends its share elsewhere
#   scripts/cluster.sh start-app N  starts instance N again with the environment it had, waits until ready
#   scripts/cluster.sh stop-worker K, start-worker K   the same for worker K (the orders wait in Redis meanwhile)
#
# Knobs (read by start; the other commands use what start recorded in CLUSTER_DIR/cluster.env):
#   CLUSTER_DIR          bin/cluster        pid files, logs, Redis data, generated nginx config
#   CLUSTER_REDIS_PORTS  "7001 7002 7003"   one Redis master each (3 or more); port+10000 is its bus
#   CLUSTER_REPLICA_PORTS (the masters' ports after the last: "7004 7005 7006")  the replicas, one a master
#                                           (CLUSTER_REPLICAS of them each, in that order); set it empty
#                                           and CLUSTER_REPLICAS=0 for none
#   CLUSTER_REPLICAS     1                  replicas per master (redis-cli --cluster create --cluster-replicas)
#   CLUSTER_APP_PORTS    "8081 8082"        one instance each (the web tier; its /metrics at port+1000)
#   CLUSTER_WORKER_PORTS "9083"             one worker each, its operators' port (/metrics, /readyz); default
#                                           the port after the last instance's, + 1000 (where the next
#                                           instance's /metrics would be); set it empty for none: the
#                                           instances then write the orders themselves (SERVE_ROLE=all)
#   CLUSTER_PORT         8090               nginx, the address to use
#   CLUSTER_DATABASE_URL postgres://postgres:postgres@127.0.0.1:5432/seckill_cluster?sslmode=disable
#                                           created when missing; CLUSTER_FRESH=1 drops and recreates it
#   CLUSTER_RATE, CLUSTER_BURST  20, 40     nginx's per-address limit on /api/ and pages (requests/s, burst)
#   CLUSTER_CONNS        512                nginx's cap on connections per address (an IPv6 /64 as one)
#   CLUSTER_CLIENTS      100000             client connections nginx is sized to hold at once (workers)
#   CLUSTER_STATUS_PORT  CLUSTER_PORT+1000  nginx's counters (stub_status), read by the instances' /metrics
#   CLUSTER_APPENDFSYNC  everysec           the Redis nodes' appendfsync (always, everysec, no)
#   CLUSTER_NODE_TIMEOUT 5000               cluster-node-timeout (ms): a master silent that long is failed
#                                           over (docs/scaling.md says why 5 s)
#   CLUSTER_ADMIN_PASSWORD, CLUSTER_MERCHANT_PASSWORD   cluster-boss-pass, cluster-seller-pass
#   SECKILL_BIN          (built)            the seckill binary; default: go build -o bin/seckill .
#   SESSION_SECRET       (generated once)   else kept in CLUSTER_DIR/session_secret (mode 600)
#   BCRYPT_COST RATE_LIMIT_IP LOG_LEVEL LOG_FORMAT PAY_TIMEOUT PREHEAT_WINDOW PAY_POLL_INTERVAL ORDER_CLAIM_IDLE CAPTCHA_POOL POW_MAXNUMBER
#                                           passed to the instances when set; nothing else is
# Files in CLUSTER_DIR: cluster.env (what start used; mode 600), session_secret (600), redis-PORT/ (a node's
# nodes.conf, append-only files, redis.log, redis.pid), cluster-create.log, setup.log (migrate, user
# create), app-N.log and app-N.pid, worker-K.log and worker-K.pid, nginx.conf and seckill.conf (generated), nginx.pid, nginx-error.log,
# nginx-temp/, nginx-cache/ (nginx's cache of shared answers), nginx-edge.log (a line a request nginx
# answered itself, counted and emptied by instance 1). start wipes all but session_secret; a relative CLUSTER_DIR is taken from the repository.
# Exit status: 0 done, 1 failed (start prints the failing part's log and stops what it started), 2 usage.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PATH=$PATH:/usr/sbin:/sbin # nginx is in /usr/sbin, outside a Debian user's PATH

say() { printf 'cluster: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
usage() { sed -n '6,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

CLUSTER_DIR=${CLUSTER_DIR:-bin/cluster}
case $CLUSTER_DIR in /*) ;; *) CLUSTER_DIR=$ROOT/$CLUSTER_DIR ;; esac
STATE=$CLUSTER_DIR/cluster.env
WORKER_PORTS=()  # a cluster started before the workers records none
REPLICA_PORTS=() # nor one started before the replicas
PASS_THROUGH=(BCRYPT_COST RATE_LIMIT_IP LOG_LEVEL LOG_FORMAT PAY_TIMEOUT PREHEAT_WINDOW PAY_POLL_INTERVAL ORDER_CLAIM_IDLE CAPTCHA_POOL POW_MAXNUMBER)
STOP_TIMEOUT=20 # seconds an instance gets after SIGTERM: its SHUTDOWN_TIMEOUT (10s) and some

# ---- helpers ---------------------------------------------------------------------------------------

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else say "need root for: $*"; return 1; fi; }
apt_install() { # apt_install PACKAGE...: Debian's packages, waiting for another apt to finish
  say "installing $*"
  as_root apt-get -o DPkg::Lock::Timeout=300 update -qq &&
    as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq "$@" >/dev/null
}
need() { # need COMMAND PACKAGE
  command -v "$1" >/dev/null 2>&1 || apt_install "$2" || die "$1 is missing and could not be installed (apt-get install $2)"
}

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# pid_of FILE KIND prints the pid in FILE when that process runs and is what the file says it is (a pid
# may have been reused since): KIND is redis-server, nginx, or the seckill binary's path.
pid_of() {
  local pid
  [ -s "$1" ] || return 1
  pid=$(tr -dc 0-9 <"$1")
  [ -n "$pid" ] && alive "$pid" || return 1
  case $2 in
    redis-server | nginx) [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ] || return 1 ;;
    *) [ "$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | head -n 1)" = "$2" ] || return 1 ;;
  esac
  echo "$pid"
}

# alive PID: the process runs. One that has exited but is not reaped yet (a zombie: the daemons' parent
# is init, which may take its time) does not.
alive() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [ "${stat%% *}" != Z ]
}

# wait_gone PID SECONDS: true once PID has exited.
wait_gone() {
  local _
  for _ in $(seq $(($2 * 10))); do
    alive "$1" || return 0
    sleep 0.1
  done
  ! alive "$1"
}

# stop_pid PID NAME SIGNAL SECONDS: signal, wait, then SIGKILL.
stop_pid() {
  kill "-$3" "$1" 2>/dev/null || return 0
  wait_gone "$1" "$4" && return 0
  say "$2 (pid $1) did not stop within $4s: killing it"
  kill -KILL "$1" 2>/dev/null || true
  wait_gone "$1" 5 || true
}

log_tail() { # log_tail FILE: the end of a part's log, for a failure message
  [ -s "$1" ] || return 0
  printf -- '---- last lines of %s\n' "$1" >&2
  tail -n 25 "$1" >&2
  printf -- '----\n' >&2
}

http_ok() { [ "$(curl -s -o /dev/null -m 2 -w '%{http_code}' "$1" 2>/dev/null)" = 200 ]; }

# ---- recorded state --------------------------------------------------------------------------------

# The settings start used, so that stop, status, stop-app and start-app act on what runs whatever the
# caller's environment says now.
save_state() {
  local v
  (umask 077 && : >"$STATE")
  {
    printf 'REDIS_PORTS=(%s)\nREPLICA_PORTS=(%s)\nAPP_PORTS=(%s)\nWORKER_PORTS=(%s)\n' "${REDIS_PORTS[*]}" "${REPLICA_PORTS[*]}" "${APP_PORTS[*]}" "${WORKER_PORTS[*]}"
    for v in LB_PORT STATUS_PORT DB_URL BIN SECRET_SHA; do printf '%s=%q\n' "$v" "${!v}"; done
    for v in "${PASS_THROUGH[@]}"; do
      if [ -n "${!v:-}" ]; then printf 'PASS_%s=%q\n' "$v" "${!v}"; fi
    done
  } >"$STATE"
}

load_state() {
  [ -f "$STATE" ] || return 1
  # shellcheck source=/dev/null
  . "$STATE"
}

# ---- the parts -------------------------------------------------------------------------------------

redis_dir() { echo "$CLUSTER_DIR/redis-$1"; }

start_redis() { # start_redis PORT
  local dir
  dir=$(redis_dir "$1")
  rm -rf "$dir"
  mkdir -p "$dir"
  STARTED=1
  # cluster-require-full-coverage no: while one master is away, the others go on serving their own
  # slots (the items and stock shards there), instead of the whole cluster refusing every command.
  # cluster-node-timeout: a master silent this long is failed over; its replica is promoted about a
  # second and a half later (measured: 7 to 8.7 s from a kill to the promotion, at 5000). Short enough
  # for the first buy on the shard within 10 s; far above what a busy master on two shared cores keeps
  # its pings waiting (a fork, a long script: milliseconds).
  # maxmemory-policy noeviction: a full master refuses writes (the buy fails, and says so) rather than
  # evicting a sale's keys (units sold twice). The same for the replicas, which are masters to be.
  # min-replicas-to-write stays 0: with one replica a master, 1 would stop a shard's every sale when its
  # replica is away; the buyers of that time are answered unconfirmed (REDIS_WAIT_REPLICAS), and a master
  # cut off from the others stops taking writes by itself after cluster-node-timeout.
  redis-server --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout "$NODE_TIMEOUT" \
    --cluster-require-full-coverage no --maxmemory-policy noeviction \
    --appendonly yes --appendfsync "$APPENDFSYNC" --save "" --daemonize yes \
    --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" --dir "$dir" \
    --bind 127.0.0.1 --port "$1" >/dev/null ||
    { log_tail "$dir/redis.log"; die "Redis on port $1 did not start"; }
}

redis_up() { [ "$(redis-cli -p "$1" ping 2>/dev/null)" = PONG ]; }
cluster_ok() { redis-cli -p "$1" cluster info 2>/dev/null | grep '^cluster_state:ok' >/dev/null; }

# create_cluster: the masters first, then the replicas: redis-cli --cluster create makes the first
# masters-many nodes the masters (on one host it cannot spread them over hosts, and says so).
create_cluster() {
  local p addrs=() _
  for p in "${REDIS_PORTS[@]}" "${REPLICA_PORTS[@]}"; do
    for _ in $(seq 50); do redis_up "$p" && break; sleep 0.1; done
    redis_up "$p" || { log_tail "$(redis_dir "$p")/redis.log"; die "Redis on port $p does not answer"; }
    addrs+=("127.0.0.1:$p")
  done
  redis-cli --cluster create "${addrs[@]}" --cluster-replicas "$REPLICAS" --cluster-yes >"$CLUSTER_DIR/cluster-create.log" 2>&1 ||
    { log_tail "$CLUSTER_DIR/cluster-create.log"; die "redis-cli --cluster create failed"; }
  for p in "${REDIS_PORTS[@]}" "${REPLICA_PORTS[@]}"; do
    for _ in $(seq 300); do cluster_ok "$p" && break; sleep 0.1; done
    cluster_ok "$p" || { log_tail "$(redis_dir "$p")/redis.log"; die "Redis on port $p never said cluster_state:ok"; }
  done
  # Each replica synced with its master: until then a buy's WAIT is not acknowledged (unconfirmed).
  for p in "${REPLICA_PORTS[@]}"; do
    for _ in $(seq 300); do replica_up "$p" && break; sleep 0.1; done
    replica_up "$p" || { log_tail "$(redis_dir "$p")/redis.log"; die "the replica on port $p never synced with its master"; }
  done
}

replica_up() { redis-cli -p "$1" info replication 2>/dev/null | tr -d '\r' | grep '^master_link_status:up' >/dev/null; }

stop_redis() { # stop_redis DIR
  local pid port
  pid=$(pid_of "$1/redis.pid" redis-server) || return 0
  port=${1##*/}
  port=${port#redis-}
  say "stopping Redis on port $port (pid $pid)"
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  wait_gone "$pid" 10 || stop_pid "$pid" "Redis on port $port" TERM 10
}

# The processes' environment: only what they need, so that nothing in the caller's shell (a NODE_ID
# all would share, say) leaks into them.
base_env() {
  local redis v pass
  # Every node as a seed: after a failover a listed master may be the one that is gone.
  redis=$(printf '127.0.0.1:%s,' "${REDIS_PORTS[@]}" "${REPLICA_PORTS[@]}")
  APP_ENV=(PATH="$PATH" HOME="${HOME:-/}" LISTEN_HOST=127.0.0.1
    BASE_URL="http://127.0.0.1:$LB_PORT" REDIS_URL="${redis%,}" DATABASE_URL="$DB_URL"
    SESSION_SECRET="$(session_secret)" TRUSTED_PROXIES=127.0.0.1 PAY_PROVIDERS=sandbox PAY_SANDBOX_ANYONE_CAN_PAY=yes)
  for v in "${PASS_THROUGH[@]}"; do
    pass=PASS_$v
    if [ -n "${!pass:-}" ]; then APP_ENV+=("$v=${!pass}"); fi
  done
}

# Instance N makes order numbers as snowflake node N. With workers it is the web tier alone.
app_env() { # app_env N
  local port=${APP_PORTS[$1 - 1]} role=all
  if [ "${#WORKER_PORTS[@]}" -gt 0 ]; then role=web; fi
  base_env
  APP_ENV+=(PORT="$port" NODE_ID="$1" METRICS_LISTEN="127.0.0.1:$((port + 1000))" SERVE_ROLE="$role")
  # nginx's counters in the instances' /metrics (a cluster started by an older script has no port), and
  # its edge log counted by instance 1 alone (it empties the log as it reads it).
  if [ -n "${STATUS_PORT:-}" ]; then APP_ENV+=(NGINX_STATUS_URL="http://127.0.0.1:$STATUS_PORT/nginx_status"); fi
  if [ "$1" = 1 ]; then APP_ENV+=(NGINX_EDGE_LOG="$CLUSTER_DIR/nginx-edge.log"); fi
}

# Worker K opens no public port: its operators' port is all it listens on. Its snowflake node follows the
# instances' (it makes no order numbers, but its consumer's name carries it).
worker_env() { # worker_env K
  base_env
  APP_ENV+=(SERVE_ROLE=worker NODE_ID="$((${#APP_PORTS[@]} + $1))" METRICS_LISTEN="127.0.0.1:${WORKER_PORTS[$1 - 1]}")
}

# session_secret prints SESSION_SECRET, or the one kept in CLUSTER_DIR (made the first time). Every
# instance must have the same: start records its hash, and start-app refuses another.
session_secret() {
  if [ -n "${SESSION_SECRET:-}" ]; then
    echo "$SESSION_SECRET"
  elif [ -s "$CLUSTER_DIR/session_secret" ]; then
    cat "$CLUSTER_DIR/session_secret"
  else
    (
      umask 077
      if command -v openssl >/dev/null; then openssl rand -hex 32; else od -An -N32 -tx1 /dev/urandom | tr -d ' \n'; fi >"$CLUSTER_DIR/session_secret"
    )
    cat "$CLUSTER_DIR/session_secret"
  fi
}

secret_sha() { session_secret | sha256sum | cut -c 1-64; }

start_app() { # start_app N
  app_env "$1"
  start_proc "instance $1" "app-$1" "${APP_PORTS[$1 - 1]}" "port ${APP_PORTS[$1 - 1]}"
}

start_worker() { # start_worker K
  worker_env "$1"
  start_proc "worker $1" "worker-$1" "${WORKER_PORTS[$1 - 1]}" "operators' port ${WORKER_PORTS[$1 - 1]}"
}

# start_proc NAME FILE PORT WHERE: starts the binary with APP_ENV, its log and pid in CLUSTER_DIR/FILE.*,
# and waits until PORT's /readyz answers (an instance's public port; a worker's operators' port).
start_proc() {
  local name=$1 log=$CLUSTER_DIR/$2.log pidfile=$CLUSTER_DIR/$2.pid port=$3 pid _
  STARTED=1
  printf -- '---- %s start\n' "$(date -u +%FT%TZ)" >>"$log"
  setsid env -i "${APP_ENV[@]}" "$BIN" serve </dev/null >>"$log" 2>&1 &
  pid=$!
  echo "$pid" >"$pidfile"
  for _ in $(seq 300); do
    if ! alive "$pid"; then
      rm -f "$pidfile"
      log_tail "$log"
      die "$name ($4) exited at start"
    fi
    http_ok "http://127.0.0.1:$port/readyz" && return 0
    sleep 0.1
  done
  stop_proc "$name" "$2" "$4"
  log_tail "$log"
  die "$name ($4) was not ready within 30s"
}

stop_app() { stop_proc "instance $1" "app-$1" "port ${APP_PORTS[$1 - 1]}"; }                  # stop_app N
stop_worker() { stop_proc "worker $1" "worker-$1" "operators' port ${WORKER_PORTS[$1 - 1]}"; } # stop_worker K

stop_proc() { # stop_proc NAME FILE WHERE
  local pid
  pid=$(pid_of "$CLUSTER_DIR/$2.pid" "$BIN") || { rm -f "$CLUSTER_DIR/$2.pid"; return 0; }
  say "stopping $1 ($3, pid $pid)"
  stop_pid "$pid" "$1" TERM "$STOP_TIMEOUT"
  rm -f "$CLUSTER_DIR/$2.pid"
}

# nginx's workers, sized so that nginx can hold CLUSTER_CLIENTS client connections at once while each
# worker stays within the open-file limit (on some machines a process cannot pass 20,000, root or not):
#   worker_rlimit_nofile  the limit itself (ulimit -n after raise_open_files; 65,536 at most)
#   worker_connections    the limit less 512 descriptors for what is not a connection (cache files being
#                         sent, the logs, the listening sockets), at most 65,536
#   workers               enough that (worker_connections - 256) x workers >= CLUSTER_CLIENTS, 256 a
#                         worker being the connections to the instances (in use and kept idle: keepalive
#                         16 a worker, the rest in flight); at least one a core
# With ulimit -n 20,000 and 100,000 clients: 19,488 connections a worker, six workers (116,000 in all).
# The connections are spread evenly over the workers by the kernel (listen ... reuseport).
nginx_sizes() {
  local cpus
  NGINX_NOFILE=$(ulimit -n)
  [ "$NGINX_NOFILE" != unlimited ] || NGINX_NOFILE=65536
  if [ "$NGINX_NOFILE" -gt 65536 ]; then NGINX_NOFILE=65536; fi
  NGINX_CONNS=$((NGINX_NOFILE - 512))
  if [ "$NGINX_CONNS" -gt 65536 ]; then NGINX_CONNS=65536; fi
  [ "$NGINX_CONNS" -ge 1024 ] || { say "warning: open files limited to $NGINX_NOFILE: nginx gets 1024 connections per worker"; NGINX_CONNS=1024; }
  cpus=$(nproc 2>/dev/null || echo 1)
  NGINX_WORKERS=$(((CLIENTS + NGINX_CONNS - 256 - 1) / (NGINX_CONNS - 256)))
  if [ "$NGINX_WORKERS" -lt "$cpus" ]; then NGINX_WORKERS=$cpus; fi
}

write_nginx_conf() {
  local p servers=""
  nginx_sizes
  for p in "${APP_PORTS[@]}"; do servers+="server 127.0.0.1:$p max_fails=1 fail_timeout=2s; "; done
  mkdir -p "$CLUSTER_DIR/nginx-temp" "$CLUSTER_DIR/nginx-cache"
  # shellcheck disable=SC2016 # envsubst's list of the variables it may replace, literally
  NGINX_LISTEN="127.0.0.1:$LB_PORT" SECKILL_UPSTREAMS=$servers CLUSTER_RATE=$RATE CLUSTER_BURST=$BURST CLUSTER_CONNS=$CONNS \
    NGINX_STATUS_LISTEN="127.0.0.1:$STATUS_PORT" NGINX_EDGE_LOG="$CLUSTER_DIR/nginx-edge.log" \
    envsubst '${NGINX_LISTEN} ${SECKILL_UPSTREAMS} ${CLUSTER_RATE} ${CLUSTER_BURST} ${CLUSTER_CONNS} ${NGINX_STATUS_LISTEN} ${NGINX_EDGE_LOG}' \
    <"$ROOT/deploy/nginx/seckill.conf.template" >"$CLUSTER_DIR/seckill.conf"
  cat >"$CLUSTER_DIR/nginx.conf" <<CONF
# Written by scripts/cluster.sh; the server itself is seckill.conf, from deploy/nginx/seckill.conf.template.
# Sized for $CLIENTS client connections (CLUSTER_CLIENTS): see nginx_sizes in scripts/cluster.sh.
worker_processes $NGINX_WORKERS;
worker_rlimit_nofile $NGINX_NOFILE;
pid $CLUSTER_DIR/nginx.pid;
error_log $CLUSTER_DIR/nginx-error.log warn;
events { worker_connections $NGINX_CONNS; }
http {
    access_log off;
    # The cache of answers that are the same for everyone (seckill.conf says which): keys for about
    # 160,000 entries in 20 MB of shared memory, at most 1 GB on disk (images are the big ones), an
    # entry unused for ten minutes dropped. Wiped at each start.
    proxy_cache_path $CLUSTER_DIR/nginx-cache levels=1:2 keys_zone=seckill:20m max_size=1g inactive=10m use_temp_path=off;
    client_body_temp_path $CLUSTER_DIR/nginx-temp/body;
    proxy_temp_path $CLUSTER_DIR/nginx-temp/proxy;
    fastcgi_temp_path $CLUSTER_DIR/nginx-temp/fastcgi;
    uwsgi_temp_path $CLUSTER_DIR/nginx-temp/uwsgi;
    scgi_temp_path $CLUSTER_DIR/nginx-temp/scgi;
    include $CLUSTER_DIR/seckill.conf;
}
CONF
}

nginx_args() { NGINX_ARGS=(-p "$CLUSTER_DIR/" -c "$CLUSTER_DIR/nginx.conf" -e "$CLUSTER_DIR/nginx-error.log"); }

start_nginx() {
  local _
  write_nginx_conf
  nginx_args
  nginx -t -q "${NGINX_ARGS[@]}" 2>>"$CLUSTER_DIR/nginx-error.log" ||
    { log_tail "$CLUSTER_DIR/nginx-error.log"; die "nginx refused its configuration ($CLUSTER_DIR/nginx.conf)"; }
  STARTED=1
  nginx "${NGINX_ARGS[@]}" 2>>"$CLUSTER_DIR/nginx-error.log" ||
    { log_tail "$CLUSTER_DIR/nginx-error.log"; die "nginx did not start"; }
  for _ in $(seq 100); do
    http_ok "http://127.0.0.1:$LB_PORT/readyz" && return 0
    sleep 0.1
  done
  log_tail "$CLUSTER_DIR/nginx-error.log"
  die "/readyz through nginx (port $LB_PORT) did not answer 200 within 10s"
}

stop_nginx() {
  local pid
  pid=$(pid_of "$CLUSTER_DIR/nginx.pid" nginx) || return 0
  say "stopping nginx (pid $pid)"
  stop_pid "$pid" nginx QUIT 10
}

# ---- the database ----------------------------------------------------------------------------------

prepare_database() {
  local base db query admin
  base=${DB_URL%%\?*}
  db=${base##*/}
  query=${DB_URL#"$base"}
  admin=${base%/*}/postgres$query
  [[ $db =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "CLUSTER_DATABASE_URL: database name '$db' must be letters, digits and _"
  psql "$admin" -tAc 'SELECT 1' >/dev/null 2>&1 ||
    die "PostgreSQL does not answer at ${admin%%@*}@... (make services starts the local one)"
  if [ "${CLUSTER_FRESH:-}" = 1 ]; then
    say "CLUSTER_FRESH=1: dropping database $db"
    psql "$admin" -qc "DROP DATABASE IF EXISTS \"$db\" WITH (FORCE)" >/dev/null
  fi
  if [ "$(psql "$admin" -tAc "SELECT 1 FROM pg_database WHERE datname = '$db'")" != 1 ]; then
    say "creating database $db"
    psql "$admin" -qc "CREATE DATABASE \"$db\"" >/dev/null
  fi
}

# seckill migrate and user create, with the instances' environment.
setup_database() {
  local log=$CLUSTER_DIR/setup.log who
  app_env 1
  env -i "${APP_ENV[@]}" "$BIN" migrate >"$log" 2>&1 || { log_tail "$log"; die "seckill migrate failed"; }
  EXISTING=()
  for who in admin merchant; do
    if env -i "${APP_ENV[@]}" "$BIN" user create --username "$who" --password "$(password_of "$who")" --role "$who" >>"$log" 2>&1; then
      continue
    elif tail -n 1 "$log" | grep username_taken >/dev/null; then
      EXISTING+=("$who")
    else
      log_tail "$log"
      die "seckill user create $who failed"
    fi
  done
}

password_of() { if [ "$1" = admin ]; then echo "$ADMIN_PASSWORD"; else echo "$MERCHANT_PASSWORD"; fi; }

# accounts prints the two accounts. One that was already there (the database outlives the cluster) is
# tried with a login through nginx: its password may be another than this start's.
accounts() {
  local who pass note answer
  for who in admin merchant; do
    pass=$(password_of "$who")
    note="role $who"
    if [[ " ${EXISTING[*]} " == *" $who "* ]]; then
      answer=$(curl -s -m 5 -H 'Content-Type: application/json' \
        -d "{\"username\":\"$who\",\"password\":\"$pass\"}" "http://127.0.0.1:$LB_PORT/api/auth/login" || true)
      if [[ $answer == *"\"role\":\"$who\""* ]]; then
        note+=", made before"
      else
        note="made before, with another password or role: CLUSTER_FRESH=1 starts over"
      fi
    fi
    printf '  %-9s %-24s (%s)\n' "$who" "$pass" "$note"
  done
}

# ---- commands --------------------------------------------------------------------------------------

running_parts() { # prints one line per part that runs
  local d n
  for d in "$CLUSTER_DIR"/redis-*; do
    [ -d "$d" ] && pid_of "$d/redis.pid" redis-server >/dev/null && echo "redis ${d##*/redis-}"
  done
  if load_state; then
    for n in $(seq "${#APP_PORTS[@]}"); do
      pid_of "$CLUSTER_DIR/app-$n.pid" "$BIN" >/dev/null && echo "instance $n"
    done
    for n in $(seq "${#WORKER_PORTS[@]}"); do
      pid_of "$CLUSTER_DIR/worker-$n.pid" "$BIN" >/dev/null && echo "worker $n"
    done
  fi
  pid_of "$CLUSTER_DIR/nginx.pid" nginx >/dev/null && echo nginx
  return 0
}

is_port() { [[ $1 =~ ^[1-9][0-9]{0,4}$ ]] && [ "$1" -le "$2" ]; }

check_settings() {
  local p all=() seen=" "
  is_port "$LB_PORT" 65535 || die "CLUSTER_PORT must be a port number, got '$LB_PORT'"
  [ "${#REDIS_PORTS[@]}" -ge 3 ] || die "CLUSTER_REDIS_PORTS: a Redis Cluster needs 3 masters or more, got '${REDIS_PORTS[*]}'"
  [ "${#APP_PORTS[@]}" -ge 1 ] || die "CLUSTER_APP_PORTS names no port"
  for p in "${REDIS_PORTS[@]}"; do
    is_port "$p" 55535 || die "CLUSTER_REDIS_PORTS: '$p' is not a port of 1 to 55535 (its bus is port+10000)"
    all+=("$p" $((p + 10000)))
  done
  [[ $REPLICAS =~ ^[0-9]$ ]] || die "CLUSTER_REPLICAS must be a count of replicas per master (0 to 9), got '$REPLICAS'"
  [ "${#REPLICA_PORTS[@]}" = $((REPLICAS * ${#REDIS_PORTS[@]})) ] ||
    die "CLUSTER_REPLICA_PORTS: $REPLICAS replicas for each of ${#REDIS_PORTS[@]} masters want $((REPLICAS * ${#REDIS_PORTS[@]})) ports, got '${REPLICA_PORTS[*]}'"
  for p in "${REPLICA_PORTS[@]}"; do
    is_port "$p" 55535 || die "CLUSTER_REPLICA_PORTS: '$p' is not a port of 1 to 55535 (its bus is port+10000)"
    all+=("$p" $((p + 10000)))
  done
  [[ $NODE_TIMEOUT =~ ^[1-9][0-9]*$ ]] || die "CLUSTER_NODE_TIMEOUT must be milliseconds, got '$NODE_TIMEOUT'"
  for p in "${APP_PORTS[@]}"; do
    is_port "$p" 65535 || die "CLUSTER_APP_PORTS: '$p' is not a port"
    all+=("$p")
    seen+="$((p + 1000)) " # its /metrics: not checked for being taken (the instance serves on without it)
  done
  for p in "${WORKER_PORTS[@]}"; do
    is_port "$p" 65535 || die "CLUSTER_WORKER_PORTS: '$p' is not a port"
    all+=("$p")
  done
  is_port "$STATUS_PORT" 65535 || die "CLUSTER_STATUS_PORT must be a port number, got '$STATUS_PORT'"
  all+=("$LB_PORT" "$STATUS_PORT")
  for p in "${all[@]}"; do
    case $seen in *" $p "*) die "port $p is named twice (Redis bus ports are port+10000, an instance's /metrics port+1000)" ;; esac
    seen+="$p "
    port_busy "$p" && die "port $p on 127.0.0.1 is taken by another program (ss -ltnp | grep :$p)"
  done
  [[ $RATE =~ ^[1-9][0-9]*$ ]] || die "CLUSTER_RATE must be a whole number of requests per second, got '$RATE'"
  [[ $BURST =~ ^[0-9]+$ ]] || die "CLUSTER_BURST must be a whole number, got '$BURST'"
  [[ $CONNS =~ ^[1-9][0-9]*$ ]] || die "CLUSTER_CONNS must be a whole number of connections, got '$CONNS'"
  [[ $CLIENTS =~ ^[1-9][0-9]*$ ]] || die "CLUSTER_CLIENTS must be a whole number of connections, got '$CLIENTS'"
  case $APPENDFSYNC in always | everysec | no) ;; *) die "CLUSTER_APPENDFSYNC must be always, everysec or no, got '$APPENDFSYNC'" ;; esac
}

# More open files for nginx (two per proxied client) and the instances, up to the hard limit.
raise_open_files() {
  local soft hard
  soft=$(ulimit -n) hard=$(ulimit -Hn)
  [ "$soft" != unlimited ] || return 0
  if [ "$hard" = unlimited ] || [ "$hard" -gt 65536 ]; then hard=65536; fi
  if [ "$soft" -lt "$hard" ]; then ulimit -n "$hard" 2>/dev/null || true; fi
}

# default_replica_ports: CLUSTER_REPLICAS ports for each master after the last master's port, as
# 7004 7005 7006 after 7001 7002 7003.
default_replica_ports() {
  local last=0 p i
  REPLICA_PORTS=()
  for p in "${REDIS_PORTS[@]}"; do if [[ $p =~ ^[0-9]+$ ]] && [ "$p" -gt "$last" ]; then last=$p; fi; done
  for i in $(seq $((${REPLICAS:-0} * ${#REDIS_PORTS[@]}))); do REPLICA_PORTS+=($((last + i))); done
}

cmd_start() {
  read -r -a REDIS_PORTS <<<"${CLUSTER_REDIS_PORTS:-7001 7002 7003}"
  REPLICAS=${CLUSTER_REPLICAS:-1} NODE_TIMEOUT=${CLUSTER_NODE_TIMEOUT:-5000}
  if [ -n "${CLUSTER_REPLICA_PORTS+set}" ]; then
    read -r -a REPLICA_PORTS <<<"$CLUSTER_REPLICA_PORTS"
  else
    default_replica_ports
  fi
  read -r -a APP_PORTS <<<"${CLUSTER_APP_PORTS:-8081 8082}"
  LB_PORT=${CLUSTER_PORT:-8090}
  DB_URL=${CLUSTER_DATABASE_URL:-postgres://postgres:postgres@127.0.0.1:5432/seckill_cluster?sslmode=disable}
  RATE=${CLUSTER_RATE:-20} BURST=${CLUSTER_BURST:-40} CONNS=${CLUSTER_CONNS:-512} APPENDFSYNC=${CLUSTER_APPENDFSYNC:-everysec}
  CLIENTS=${CLUSTER_CLIENTS:-100000} STATUS_PORT=${CLUSTER_STATUS_PORT:-$((LB_PORT + 1000))}
  read -r -a WORKER_PORTS <<<"${CLUSTER_WORKER_PORTS-$((${APP_PORTS[${#APP_PORTS[@]} - 1]:-0} + 1001))}"
  ADMIN_PASSWORD=${CLUSTER_ADMIN_PASSWORD:-cluster-boss-pass}
  MERCHANT_PASSWORD=${CLUSTER_MERCHANT_PASSWORD:-cluster-seller-pass}
  local v running
  for v in "${PASS_THROUGH[@]}"; do
    if [ -n "${!v:-}" ]; then printf -v "PASS_$v" '%s' "${!v}"; fi
  done

  mkdir -p "$CLUSTER_DIR"
  running=$(running_parts)
  if [ -n "$running" ]; then
    say "already running (scripts/cluster.sh status); stop it first with: make cluster-stop"
    while read -r v; do say "  $v"; done <<<"$running"
    exit 1
  fi
  need redis-server redis-server
  need redis-cli redis-tools
  need nginx nginx
  need envsubst gettext-base
  need psql postgresql-client
  need curl curl
  check_settings

  raise_open_files

  if [ -n "${SECKILL_BIN:-}" ]; then
    BIN=$SECKILL_BIN
    case $BIN in /*) ;; *) BIN=$ROOT/$BIN ;; esac
    [ -x "$BIN" ] || die "SECKILL_BIN: $BIN is not an executable"
  else
    say "building bin/seckill"
    mkdir -p bin
    go build -o bin/seckill . || die "go build failed"
    BIN=$ROOT/bin/seckill
  fi

  STARTED=0
  trap 'start_failed' EXIT
  trap 'exit 130' INT TERM
  rm -f "$CLUSTER_DIR"/app-*.pid "$CLUSTER_DIR"/app-*.log "$CLUSTER_DIR"/worker-*.pid "$CLUSTER_DIR"/worker-*.log "$CLUSTER_DIR/nginx.pid" "$CLUSTER_DIR/nginx-error.log" \
    "$CLUSTER_DIR/cluster-create.log"
  rm -rf "$CLUSTER_DIR"/redis-* "$CLUSTER_DIR/nginx-temp" "$CLUSTER_DIR/nginx-cache" "$CLUSTER_DIR/nginx-edge.log"
  SECRET_SHA=$(secret_sha)
  save_state

  prepare_database
  say "starting Redis Cluster on ports ${REDIS_PORTS[*]} (masters) ${REPLICA_PORTS[*]} (replicas)"
  for v in "${REDIS_PORTS[@]}" "${REPLICA_PORTS[@]}"; do start_redis "$v"; done
  create_cluster

  say "migrating and making the accounts"
  setup_database

  for v in $(seq "${#APP_PORTS[@]}"); do
    say "starting instance $v on port ${APP_PORTS[$v - 1]}"
    start_app "$v"
  done
  for v in $(seq "${#WORKER_PORTS[@]}"); do
    say "starting worker $v (operators' port ${WORKER_PORTS[$v - 1]})"
    start_worker "$v"
  done
  say "starting nginx on port $LB_PORT"
  start_nginx
  trap - EXIT INT TERM

  cat <<DONE
seckill runs at http://127.0.0.1:$LB_PORT  (nginx: $RATE requests/s per address on /api/, burst $BURST)
  instances      $(printf '127.0.0.1:%s ' "${APP_PORTS[@]}")(logs: $CLUSTER_DIR/app-N.log)
  workers        $(workers_line)
  Redis Cluster  $(printf '127.0.0.1:%s ' "${REDIS_PORTS[@]}")(masters), $(printf '127.0.0.1:%s ' "${REPLICA_PORTS[@]}")(replicas)
  database       $(sed -E 's#(//[^:/@]*):[^@/]*@#\1:***@#' <<<"${DB_URL%%\?*}")
accounts (username, password)
$(accounts)
scripts/cluster.sh status | stop-app N | start-app N; make cluster-stop stops it all.
DONE
}

workers_line() {
  if [ "${#WORKER_PORTS[@]}" = 0 ]; then
    echo "none: the instances write the orders themselves (SERVE_ROLE=all)"
  else
    printf '127.0.0.1:%s ' "${WORKER_PORTS[@]}"
    echo "(operators' ports: /metrics, /readyz; logs: $CLUSTER_DIR/worker-K.log)"
  fi
}

start_failed() {
  local code=$?
  trap - EXIT
  if [ "$STARTED" = 1 ]; then
    say "start failed: stopping what it started"
    stop_all
  fi
  exit "$((code == 0 ? 1 : code))"
}

stop_all() {
  local d n
  stop_nginx
  if load_state; then
    for n in $(seq "${#APP_PORTS[@]}"); do stop_app "$n"; done
    # After the instances: what they queued last is written before the workers stop.
    for n in $(seq "${#WORKER_PORTS[@]}"); do stop_worker "$n"; done
  fi
  for d in "$CLUSTER_DIR"/redis-*; do [ -d "$d" ] && stop_redis "$d"; done
  return 0
}

cmd_stop() {
  [ -d "$CLUSTER_DIR" ] || { say "nothing to stop ($CLUSTER_DIR does not exist)"; return 0; }
  stop_all
  [ -z "$(running_parts)" ] || die "something still runs: $(running_parts | tr '\n' ' ')"
  say "stopped"
}

cmd_status() {
  local d p pid n total=0 up=0 state
  if ! load_state; then
    echo "not started ($STATE does not exist)"
    return 3
  fi
  for p in "${REDIS_PORTS[@]}" "${REPLICA_PORTS[@]}"; do
    d=$(redis_dir "$p")
    total=$((total + 1))
    if pid=$(pid_of "$d/redis.pid" redis-server); then
      up=$((up + 1))
      state=$(redis-cli -p "$p" cluster info 2>/dev/null | tr -d '\r' | grep '^cluster_state:' || echo 'cluster_state:?')
      # The role now: after a failover a replica's port may be a master's, and the other way round.
      state+=", $(redis-cli -p "$p" info replication 2>/dev/null | tr -d '\r' | grep '^role:' || echo 'role:?')"
      echo "redis      127.0.0.1:$p  running (pid $pid), $state"
    else
      echo "redis      127.0.0.1:$p  stopped"
    fi
  done
  for n in $(seq "${#APP_PORTS[@]}"); do
    p=${APP_PORTS[$n - 1]}
    total=$((total + 1))
    if pid=$(pid_of "$CLUSTER_DIR/app-$n.pid" "$BIN"); then
      up=$((up + 1))
      if http_ok "http://127.0.0.1:$p/readyz"; then state=ready; else state="not ready"; fi
      echo "instance $n 127.0.0.1:$p  running (pid $pid), $state"
    else
      echo "instance $n 127.0.0.1:$p  stopped"
    fi
  done
  for n in $(seq "${#WORKER_PORTS[@]}"); do
    p=${WORKER_PORTS[$n - 1]}
    total=$((total + 1))
    if pid=$(pid_of "$CLUSTER_DIR/worker-$n.pid" "$BIN"); then
      up=$((up + 1))
      if http_ok "http://127.0.0.1:$p/readyz"; then state=ready; else state="not ready"; fi
      echo "worker $n   127.0.0.1:$p  running (pid $pid), $state (its operators' port; no public one)"
    else
      echo "worker $n   127.0.0.1:$p  stopped"
    fi
  done
  total=$((total + 1))
  if pid=$(pid_of "$CLUSTER_DIR/nginx.pid" nginx); then
    up=$((up + 1))
    if http_ok "http://127.0.0.1:$LB_PORT/readyz"; then state=ready; else state="/readyz does not answer 200"; fi
    echo "nginx      127.0.0.1:$LB_PORT  running (pid $pid), $state: http://127.0.0.1:$LB_PORT"
  else
    echo "nginx      127.0.0.1:$LB_PORT  stopped"
  fi
  if [ "$up" = "$total" ]; then return 0; elif [ "$up" = 0 ]; then return 3; else return 1; fi
}

app_number() { # app_number ARG: checks N against what start recorded
  load_state || die "not started ($STATE does not exist)"
  if ! [[ ${1:-} =~ ^[1-9][0-9]*$ ]] || [ "$1" -gt "${#APP_PORTS[@]}" ]; then
    say "instance number must be 1 to ${#APP_PORTS[@]}, got '${1:-}'"
    exit 2
  fi
}

cmd_stop_app() {
  app_number "${1:-}"
  if ! pid_of "$CLUSTER_DIR/app-$1.pid" "$BIN" >/dev/null; then say "instance $1 is not running"; return 0; fi
  stop_app "$1"
  say "instance $1 stopped"
}

cmd_start_app() {
  app_number "${1:-}"
  if pid_of "$CLUSTER_DIR/app-$1.pid" "$BIN" >/dev/null; then say "instance $1 already runs"; return 0; fi
  port_busy "${APP_PORTS[$1 - 1]}" && die "port ${APP_PORTS[$1 - 1]} on 127.0.0.1 is taken by another program"
  [ "$(secret_sha)" = "$SECRET_SHA" ] ||
    die "the session secret is not the one the cluster started with (set SESSION_SECRET as it was for start, or unset it)"
  raise_open_files
  STARTED=0
  start_app "$1"
  say "instance $1 ready on port ${APP_PORTS[$1 - 1]}"
}

worker_number() { # worker_number ARG: checks K against what start recorded
  load_state || die "not started ($STATE does not exist)"
  if ! [[ ${1:-} =~ ^[1-9][0-9]*$ ]] || [ "$1" -gt "${#WORKER_PORTS[@]}" ]; then
    say "worker number must be 1 to ${#WORKER_PORTS[@]}, got '${1:-}'"
    exit 2
  fi
}

cmd_stop_worker() {
  worker_number "${1:-}"
  if ! pid_of "$CLUSTER_DIR/worker-$1.pid" "$BIN" >/dev/null; then say "worker $1 is not running"; return 0; fi
  stop_worker "$1"
  say "worker $1 stopped: the orders the instances take wait in Redis until a worker runs"
}

cmd_start_worker() {
  worker_number "${1:-}"
  if pid_of "$CLUSTER_DIR/worker-$1.pid" "$BIN" >/dev/null; then say "worker $1 already runs"; return 0; fi
  port_busy "${WORKER_PORTS[$1 - 1]}" && die "port ${WORKER_PORTS[$1 - 1]} on 127.0.0.1 is taken by another program"
  [ "$(secret_sha)" = "$SECRET_SHA" ] ||
    die "the session secret is not the one the cluster started with (set SESSION_SECRET as it was for start, or unset it)"
  raise_open_files
  STARTED=0
  start_worker "$1"
  say "worker $1 ready (operators' port ${WORKER_PORTS[$1 - 1]})"
}

case ${1:-} in
  start) [ $# = 1 ] || usage; cmd_start ;;
  stop) [ $# = 1 ] || usage; cmd_stop ;;
  status) [ $# = 1 ] || usage; cmd_status ;;
  stop-app) [ $# = 2 ] || usage; cmd_stop_app "$2" ;;
  start-app) [ $# = 2 ] || usage; cmd_start_app "$2" ;;
  stop-worker) [ $# = 2 ] || usage; cmd_stop_worker "$2" ;;
  start-worker) [ $# = 2 ] || usage; cmd_start_worker "$2" ;;
  *) usage ;;
esac
