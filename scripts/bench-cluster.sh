#!/usr/bin/env bash
# make bench-cluster: the load tool's scenarios through nginx on a Redis Cluster of three masters,
# a replica each (the layout of make cluster, on ports of its own; replicas on 7104-7106), first with two instances and then with one (the other
# stopped), set side by side in docs/performance.md with what a request cost each process in CPU.
# SCALE shrinks the scenarios (default 0.5: the machine runs nine processes besides the load tool);
# SCENARIOS picks them (name:N splits the item over N stock shards; SCENARIOS= none); ROUNDS=3 alternates two instances
# and one three times and reports the medians. BENCH_FIGURES=DIR skips the runs and writes the section
# from the figures an earlier run kept in DIR (two-1.json, one-1.json, ...; give the SCALE they had).
#
# Then the crowds (CROWDS, default queue,crowd; CROWDS= skips them) once, with two instances: SHOPPERS
# shoppers (default 10,000; SHOPPERS=100000 for the hundred thousand) for a twentieth as many units, their
# accounts seeded beforehand and logged in before the countdown (COUNTDOWN, default 15s), shopping from
# CROWD_PROCS load-tool processes (default one per 25,000 shoppers) over keep-alive connections through
# nginx, each process sharing one fetch a second of the public documents; the requests that reached the
# instances and their database statements are read from the instances' /metrics. The audit runs on every
# shopper. Their report is the section "The crowd through nginx" of docs/performance.md (SHOPPERS=100000
# and more: the section "A hundred thousand shoppers"; give COUNTDOWN=120s and CAPTCHA_POOL=60000 there,
# as a real crowd of that size arrives over minutes).
#
# Last, nginx holds CONNS_HELD open client connections (default 100,000; CONNS_HELD= skips it) from
# processes of cmd/holdconns, each under this machine's 20,000 files, while the instances keep a few
# each: the section "A hundred thousand open connections at nginx" of docs/performance.md.
set -euo pipefail
if [ -n "${BENCH_FIGURES:-}" ]; then BENCH_FIGURES=$(realpath "$BENCH_FIGURES"); fi # from the caller's folder
cd "$(dirname "$0")/.."
SCALE=${SCALE:-0.5}
SCENARIOS=${SCENARIOS-rush,big,big:4,soldout,pages}
ROUNDS=${ROUNDS:-1}
CROWDS=${CROWDS-queue,crowd}
CONNS_HELD=${CONNS_HELD-100000}
export CAPTCHA_POOL=${CAPTCHA_POOL:-10000} # passed to the instances by cluster.sh
# The proof of work's price at rest: the floor outside demo mode, so that the load tool, on the same two
# cores, can pay the crowd's joins (at the default 400,000 it pays four times as much a join).
export POW_MAXNUMBER=${POW_MAXNUMBER:-100000}
SHOPPERS=${SHOPPERS:-10000}
CROWD_PROCS=${CROWD_PROCS:-$(((SHOPPERS + 24999) / 25000))}
COUNTDOWN=${COUNTDOWN:-15s}
# The queue crowd's sale keeps the rules a queue sale has by default (issue 32): one entrant per delivery
# address (each shopper's own, seeded) and accounts from before the approval. QUEUE_RULES= for none.
QUEUE_RULES=${QUEUE_RULES-one_per_address,accounts_before_approval}
OUT=${BENCH_OUT:-docs/performance.md}
REDIS_PORTS=(7101 7102 7103)
# The instances are the web tier; one worker apart writes the orders (its operators' port 9183).
export CLUSTER_DIR=${CLUSTER_DIR:-bin/bench-cluster} CLUSTER_REDIS_PORTS="${REDIS_PORTS[*]}" CLUSTER_APP_PORTS="8181 8182" CLUSTER_PORT=8190
export CLUSTER_WORKER_PORTS=9183
export CLUSTER_DATABASE_URL=${BENCH_CLUSTER_DB:-postgres://postgres:postgres@127.0.0.1:5432/seckill_bench_cluster?sslmode=disable} CLUSTER_FRESH=1
# The load comes from 64 loopback addresses; nginx's limits are lifted so that it measures, not refuses
# (limit_conn takes at most 65,535).
export CLUSTER_RATE=1000000 CLUSTER_BURST=1000000 CLUSTER_CONNS=65535 BCRYPT_COST=4 RATE_LIMIT_IP=off LOG_LEVEL=warn

run=${BENCH_FIGURES:-}
if [ -z "$run" ]; then
  ./scripts/services.sh
  mkdir -p bin
  go build -o bin/seckill .
  go build -o bin/loadtest ./cmd/loadtest
  go build -o bin/holdconns ./cmd/holdconns
  export SECKILL_BIN=$PWD/bin/seckill
  case $CLUSTER_DIR in /*) dir=$CLUSTER_DIR ;; *) dir=$PWD/$CLUSTER_DIR ;; esac

  scripts/cluster.sh stop >/dev/null 2>&1 || true
  scripts/cluster.sh start
  trap 'scripts/cluster.sh stop >/dev/null 2>&1 || true' EXIT

  # cpu APPS... names the processes whose CPU time the load tool measures: the running instances (the
  # web tier), the worker that writes the orders, the Redis masters and nginx (its master and workers).
  cpu() {
    local apps="" worker redis="" nginx app port master
    for app in "$@"; do apps+="${apps:+,}$(cat "$dir/app-$app.pid")"; done
    worker=$(cat "$dir/worker-1.pid")
    for port in "${REDIS_PORTS[@]}"; do redis+="${redis:+,}$(cat "$dir/redis-$port/redis.pid")"; done
    master=$(cat "$dir/nginx.pid")
    nginx=$master
    for p in $(pgrep -P "$master"); do nginx+=",$p"; done
    echo "app=$apps;worker=$worker;redis=$redis;nginx=$nginx"
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
  if [ -n "$SCENARIOS" ]; then
    for round in $(seq "$ROUNDS"); do
      fire "two-$round" 1 2
      scripts/cluster.sh stop-app 2
      fire "one-$round" 1
      scripts/cluster.sh start-app 2
    done
  fi
  if [ -n "$CROWDS" ]; then
    echo "bench-cluster: $CROWDS, $SHOPPERS shoppers from $CROWD_PROCS processes" >&2
    ports=($CLUSTER_APP_PORTS)
    metrics=""
    for p in "${ports[@]}"; do metrics+="${metrics:+,}http://127.0.0.1:$((p + 1000))/metrics"; done
    metrics+=",http://127.0.0.1:$CLUSTER_WORKER_PORTS/metrics" # the orders' writes are the worker's statements
    # The audit's verdict is in the report; a failed one is said below, after the section is written.
    bin/loadtest -base "http://127.0.0.1:$CLUSTER_PORT" -redis "127.0.0.1:${REDIS_PORTS[0]},127.0.0.1:${REDIS_PORTS[1]},127.0.0.1:${REDIS_PORTS[2]}" \
      -admin admin:cluster-boss-pass -merchant merchant:cluster-seller-pass -scenario "$CROWDS" -shoppers "$SHOPPERS" \
      -procs "$CROWD_PROCS" -countdown "$COUNTDOWN" -seed -db "$CLUSTER_DATABASE_URL" -metrics "$metrics" -sources 64 \
      -queue-rules "$QUEUE_RULES" -cpu "$(cpu 1 2)" -report "$run/crowds.md" >/dev/null || echo "bench-cluster: the crowds' run failed (its audit, or the run)" >&2
  fi
  if [ -n "$CONNS_HELD" ]; then
    echo "bench-cluster: $CONNS_HELD connections held at nginx" >&2
    ports=($CLUSTER_APP_PORTS)
    bin/holdconns -target "127.0.0.1:$CLUSTER_PORT" -conns "$CONNS_HELD" -path / -every 30s -hold 20s -ramp 45s \
      -app-ports "$(IFS=,; echo "${ports[*]}")" -report "$run/conns.md" >/dev/null || echo "bench-cluster: nginx did not hold them all (see $OUT)" >&2
  fi
  echo "bench-cluster: figures kept in $run" >&2
else
  ROUNDS=$(find "$run" -name 'two-*.json' | wc -l) # and SCALE as given: say the one those runs had
fi
files() { find "$run" -name "$1-*.json" | sort | paste -sd, -; }

# replace_section NAME FILE: FILE (a section between `<!-- NAME: ... -->` and `<!-- /NAME -->`) replaces
# the section of that name in the report, or goes at its end.
replace_section() {
  if grep -q "^<!-- $1:" "$OUT" 2>/dev/null; then
    awk -v sec="$2" -v name="$1" '
      index($0, "<!-- " name ":") == 1 { while ((getline l < sec) > 0) print l; skip = 1; next }
      $0 == "<!-- /" name " -->" { skip = 0; next }
      !skip' "$OUT" >"$run/out.md"
  else
    { cat "$OUT"; echo; cat "$2"; } >"$run/out.md"
  fi
  cp "$run/out.md" "$OUT"
}

if [ -n "$(files two)" ]; then
  # The tables first: a failure inside the here-document below would not stop the script.
  table=$(go run ./cmd/loadtest compare -labels "one instance,two instances" "$(files one)" "$(files two)")
  rounds="one round"
  [ "$ROUNDS" -gt 1 ] && rounds="the medians of $ROUNDS rounds (two instances, then one, in turn)"
  {
    cat <<MD
<!-- cluster: written by make bench-cluster; make bench keeps it -->
## One instance and two, behind nginx on a Redis Cluster

Written by \`make bench-cluster\` (scripts/bench-cluster.sh) on $(date -u +%Y-%m-%d): the layout of
\`make cluster\` (three Redis masters with append-only files, a replica each, nginx, PostgreSQL) with two seckill instances
(the web tier, SERVE_ROLE=web) and one worker writing the orders apart (SERVE_ROLE=worker, its CPU the
row "worker"), then with one of the instances stopped, driven through nginx by the load tool from 64
loopback addresses at scale $SCALE; $rounds. Everything, the load tool included, shares this machine's $(nproc) cores: a second instance adds
no cores here, so this measures what a second instance costs and what each tier spends per request, not
how far two machines would go. The second table is the per-core figure docs/scaling.md builds on:
requests answered per second of CPU used by each tier while the requests were fired.

$table
<!-- /cluster -->
MD
  } >"$run/section.md"
  replace_section cluster "$run/section.md"
  echo "wrote the cluster section of $OUT"
fi

if [ -s "$run/crowds.md" ]; then
  # A hundred thousand shoppers have a section of their own beside the 10,000 (the goals differ: at that
  # size every shopper a final answer and the budget, not the times).
  section=crowd-cluster title="The crowd through nginx: what a shopper costs the instances"
  if [ "$SHOPPERS" -ge 100000 ]; then
    section=crowd-100k title="A hundred thousand shoppers through nginx"
  fi
  {
    cat <<MD
<!-- $section: written by make bench-cluster; make bench keeps it -->
## $title

Written by \`make bench-cluster\` (scripts/bench-cluster.sh) on $(date -u +%Y-%m-%d): $CROWDS with $SHOPPERS shoppers
for a twentieth as many units, through nginx to two seckill instances on a three-master Redis Cluster, on this
machine's $(nproc) cores shared with the load tool ($CROWD_PROCS process(es) of shoppers, from 64 loopback
addresses). The shoppers' accounts were made beforehand in bulk and logged in before the countdown (not
counted). Each shopper's page does what the pages do; the public documents (the line's, the item) are
fetched once a second per load-tool process for all its shoppers, as browsers behind one caching proxy;
every request a shopper's page sends of its own is a real request through nginx. "Reached the instances"
is the sum over the instances of their own \`seckill_http_requests_total\`, read before the first
shopper arrives and after the last has its final answer; the database statements are the app's own
counters, each second. The budget it is held to is the section "Budget a shopper may cost" above.

MD
    sed -e '1{/^## Load tool run/d}' -e 's/^### Goals$/### Goals of the crowds/' "$run/crowds.md"
    echo "<!-- /$section -->"
  } >"$run/crowd-section.md"
  replace_section "$section" "$run/crowd-section.md"
  echo "wrote the crowd section of $OUT"
  if grep -q 'Audit \*\*FAILED\*\*' "$run/crowds.md"; then
    echo "bench-cluster: a crowd's audit FAILED (see $OUT)" >&2
    exit 1
  fi
fi
if [ -s "$run/conns.md" ]; then
  replace_section conns-held "$run/conns.md"
  echo "wrote the connections section of $OUT"
fi
