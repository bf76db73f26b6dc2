#!/usr/bin/env bash
# make bench-cluster: the load tool's scenarios through nginx on a three-master Redis Cluster (the
# layout of make cluster, on ports of its own), first with two instances and then with one (the other
# stopped), set side by side in docs/performance.md with what a request cost each process in CPU.
# SCALE shrinks the scenarios (default 0.5: the machine runs nine processes besides the load tool);
# SCENARIOS picks them (name:N splits the item over N stock shards); ROUNDS=3 alternates two instances
# and one three times and reports the medians. BENCH_FIGURES=DIR skips the runs and writes the section
# from the figures an earlier run kept in DIR (two-1.json, one-1.json, ...; give the SCALE they had).
set -euo pipefail
if [ -n "${BENCH_FIGURES:-}" ]; then BENCH_FIGURES=$(realpath "$BENCH_FIGURES"); fi # from the caller's folder
cd "$(dirname "$0")/.."
SCALE=${SCALE:-0.5}
SCENARIOS=${SCENARIOS:-rush,big,big:4,soldout,pages}
ROUNDS=${ROUNDS:-1}
OUT=${BENCH_OUT:-docs/performance.md}
REDIS_PORTS=(7101 7102 7103)
export CLUSTER_DIR=${CLUSTER_DIR:-bin/bench-cluster} CLUSTER_REDIS_PORTS="${REDIS_PORTS[*]}" CLUSTER_APP_PORTS="8181 8182" CLUSTER_PORT=8190
export CLUSTER_DATABASE_URL=${BENCH_CLUSTER_DB:-postgres://postgres:postgres@127.0.0.1:5432/seckill_bench_cluster?sslmode=disable} CLUSTER_FRESH=1
# The load comes from 64 loopback addresses; nginx's limit is lifted so that it measures, not refuses.
export CLUSTER_RATE=1000000 CLUSTER_BURST=1000000 CLUSTER_CONNS=1000000 BCRYPT_COST=4 RATE_LIMIT_IP=off LOG_LEVEL=warn

run=${BENCH_FIGURES:-}
if [ -z "$run" ]; then
  ./scripts/services.sh
  mkdir -p bin
  go build -o bin/seckill .
  go build -o bin/loadtest ./cmd/loadtest
  export SECKILL_BIN=$PWD/bin/seckill
  case $CLUSTER_DIR in /*) dir=$CLUSTER_DIR ;; *) dir=$PWD/$CLUSTER_DIR ;; esac

  scripts/cluster.sh stop >/dev/null 2>&1 || true
  scripts/cluster.sh start
  trap 'scripts/cluster.sh stop >/dev/null 2>&1 || true' EXIT

  # cpu APPS... names the processes whose CPU time the load tool measures: the running instances, the
  # Redis masters and nginx (its master and workers).
  cpu() {
    local apps="" redis="" nginx app port master
    for app in "$@"; do apps+="${apps:+,}$(cat "$dir/app-$app.pid")"; done
    for port in "${REDIS_PORTS[@]}"; do redis+="${redis:+,}$(cat "$dir/redis-$port/redis.pid")"; done
    master=$(cat "$dir/nginx.pid")
    nginx=$master
    for p in $(pgrep -P "$master"); do nginx+=",$p"; done
    echo "app=$apps;redis=$redis;nginx=$nginx"
  }

  run=$(mktemp -d)
  fire() { # fire LABEL APPS...
    local label=$1
    shift
    echo "bench-cluster: $label" >&2
    bin/loadtest -base "http://127.0.0.1:$CLUSTER_PORT" -redis "127.0.0.1:${REDIS_PORTS[0]},127.0.0.1:${REDIS_PORTS[1]},127.0.0.1:${REDIS_PORTS[2]}" \
      -admin admin:cluster-boss-pass -merchant merchant:cluster-seller-pass -scenario "$SCENARIOS" -scale "$SCALE" \
      -sources 64 -baseline=false -cpu "$(cpu "$@")" -json "$run/$label.json" >/dev/null
  }
  for round in $(seq "$ROUNDS"); do
    fire "two-$round" 1 2
    scripts/cluster.sh stop-app 2
    fire "one-$round" 1
    scripts/cluster.sh start-app 2
  done
  echo "bench-cluster: figures kept in $run" >&2
else
  ROUNDS=$(find "$run" -name 'two-*.json' | wc -l) # and SCALE as given: say the one those runs had
fi
files() { find "$run" -name "$1-*.json" | sort | paste -sd, -; }
# The tables first: a failure inside the here-document below would not stop the script.
table=$(go run ./cmd/loadtest compare -labels "one instance,two instances" "$(files one)" "$(files two)")
rounds="one round"
[ "$ROUNDS" -gt 1 ] && rounds="the medians of $ROUNDS rounds (two instances, then one, in turn)"

{
  cat <<MD
<!-- cluster: written by make bench-cluster; make bench keeps it -->
## One instance and two, behind nginx on a Redis Cluster

Written by \`make bench-cluster\` (scripts/bench-cluster.sh) on $(date -u +%Y-%m-%d): the layout of
\`make cluster\` (three Redis masters with append-only files, nginx, PostgreSQL) with two seckill instances,
then with one of them stopped, driven through nginx by the load tool from 64 loopback addresses at scale
$SCALE; $rounds. Everything, the load tool included, shares this machine's $(nproc) cores: a second instance adds
no cores here, so this measures what a second instance costs and what each tier spends per request, not
how far two machines would go. The second table is the per-core figure docs/scaling.md builds on:
requests answered per second of CPU used by each tier while the requests were fired.

$table
<!-- /cluster -->
MD
} >"$run/section.md"

# Replace the section in the report, or add it at the end.
if grep -q '^<!-- cluster:' "$OUT" 2>/dev/null; then
  awk -v sec="$run/section.md" '
    /^<!-- cluster:/ { while ((getline l < sec) > 0) print l; skip = 1; next }
    /^<!-- \/cluster -->/ { skip = 0; next }
    !skip' "$OUT" >"$run/out.md"
else
  { cat "$OUT"; echo; cat "$run/section.md"; } >"$run/out.md"
fi
cp "$run/out.md" "$OUT"
echo "wrote the cluster section of $OUT"
