#!/usr/bin/env bash
# What one buy costs Redis, in instructions: the same from run to run, unlike CPU time on a shared machine.
# Runs stock's BenchmarkTakeScript (batches of 13 buyers) against a Redis of its own under callgrind on
# TAKE_COST_PORT (6390), PostgreSQL as the tests find it, and prints the instructions per buy the timed
# part cost Redis (the network's kernel time is not counted: callgrind sees user space only).
set -euo pipefail
cd "$(dirname "$0")/.."
port=${TAKE_COST_PORT:-6390}
batches=${TAKE_COST_BATCHES:-1500}
command -v valgrind >/dev/null || { echo "take-cost: needs valgrind (apt-get install -y valgrind)" >&2; exit 1; }
dir=$(mktemp -d)
valgrind --tool=callgrind --callgrind-out-file="$dir/out" redis-server --port "$port" --save '' --appendonly no \
  >"$dir/valgrind.log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.2; done
CALLGRIND_PID=$pid TEST_REDIS_URL=redis://127.0.0.1:$port/0 \
  go test -run '^$' -bench '^BenchmarkTakeScript$' -benchtime "${batches}x" ./stock >"$dir/bench.log" 2>&1 ||
  { cat "$dir/bench.log" >&2; exit 1; }
dump=$(ls -t "$dir"/out.* | head -1)
total=$(awk '/^summary:/ {print $2}' "$dump")
echo "take script: $((total / (batches * 13))) instructions of Redis a buy ($batches batches of 13 buyers)"
