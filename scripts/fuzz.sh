#!/usr/bin/env bash
# Runs every Go fuzz target in the module (every func FuzzXxx(f *testing.F) in a _test.go file), one
# after another, for FUZZTIME each (default 3s), and stops at the first that fails. A new failing input is
# written by go test under the package's testdata/fuzz/FuzzXxx/, where `go test ./...` replays it from then
# on; this script prints where it is and how to re-run it.
#
#   FUZZTIME=60s ./scripts/fuzz.sh        every target for a minute (make fuzz)
#   FUZZ_KEEP_GOING=1 ./scripts/fuzz.sh   run every target even after a failure, and fail at the end
#
# The fuzz targets of ./app and ./auth use the real PostgreSQL and Redis (make services).
#
# Each package's test binary is built once, with the fuzzer's instrumentation (go test -c -fuzz), and run
# once a target from the package's directory, as go test runs it: a `go test -fuzz` a target would link the
# same binary again for each (about 25 s of a CI run's time a target, for 3 s of fuzzing). What the fuzzer
# keeps between runs stays where go test keeps it ($GOCACHE/fuzz/<import path>).
set -euo pipefail

cd "$(dirname "$0")/.."
GO="${GO:-go}"
fuzztime="${FUZZTIME:-3s}"
keep_going="${FUZZ_KEEP_GOING:-}"
root="$PWD"

# Packages with a fuzz target: a cheap grep picks the candidates, go test -list names the targets.
mapfile -t dirs < <(grep -rlE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*\(' . | xargs -r -n1 dirname | sort -u)
if [ "${#dirs[@]}" -eq 0 ]; then
	echo "fuzz: no fuzz targets found" >&2
	exit 1
fi

log="$(mktemp)"
bins="$(mktemp -d)"
trap 'rm -rf "$log" "$bins"' EXIT
cache="$($GO env GOCACHE)/fuzz"
started=$SECONDS
count=0
failures=()
for dir in "${dirs[@]}"; do
	rel="${dir#./}"
	bin="$bins/${rel//\//_}.test"
	if ! $GO test -c -fuzz . -o "$bin" "./$rel" >"$log" 2>&1; then
		echo "FAIL  ./$rel: the test binary does not build" >&2
		sed 's/^/      /' "$log" >&2
		exit 1
	fi
	importpath="$($GO list "./$rel")"
	# fuzz runs one target of the package in its directory (where testdata/fuzz is read and written).
	fuzz() { (cd "$root/$rel" && "$bin" -test.run '^$' -test.fuzz "^${name}\$" -test.fuzztime "$1" -test.timeout 10m -test.fuzzcachedir "$cache/$importpath"); }
	mapfile -t names < <(cd "$root/$rel" && "$bin" -test.list '^Fuzz' | grep -E '^Fuzz[A-Za-z0-9_]*$' || true)
	for name in "${names[@]}"; do
		count=$((count + 1))
		t0=$SECONDS
		ok=
		before="$(git status --porcelain --untracked-files=all -- '*/testdata/fuzz' 2>/dev/null || true)"
		for try in 1 2; do
			if fuzz "$fuzztime" >"$log" 2>&1; then
				ok=1
				break
			fi
			# Go's fuzzer can fail at the end of its time with "context deadline exceeded" and no finding
			# (a shutdown race in Go before 1.27): that earns one more go, unless it left an input behind.
			if grep -q 'Failing input written\|failure while testing seed corpus' "$log" || ! grep -q 'context deadline exceeded' "$log"; then
				break
			fi
			if [ "$(git status --porcelain --untracked-files=all -- '*/testdata/fuzz' 2>/dev/null || true)" != "$before" ]; then
				break
			fi
		done
		# A run whose time ended while it was still replaying its corpus (the seeds and what earlier runs
		# kept in Go's cache) fuzzed nothing: it gets once more, for ten times as long, and a warning if
		# that is not enough either.
		if [ -n "$ok" ] && ! grep -q 'execs: [1-9]' "$log"; then
			longer="$(awk -v t="$fuzztime" 'BEGIN { n = t + 0; u = substr(t, length(n "") + 1); print n * 10 u }')"
			if ! fuzz "$longer" >"$log" 2>&1; then
				ok=
			elif ! grep -q 'execs: [1-9]' "$log"; then
				echo "      warning: $name only replayed its corpus in $longer (go clean -fuzzcache forgets what earlier runs kept)" >&2
			fi
		fi
		if [ -n "$ok" ] && [ "$(git status --porcelain --untracked-files=all -- '*/testdata/fuzz' 2>/dev/null || true)" != "$before" ]; then
			echo "      a new input was written under testdata/fuzz although the run passed: a finding that fails only sometimes" >&2
			ok=
		fi
		if [ -n "$ok" ]; then
			execs="$(grep -oE 'execs: [0-9]+' "$log" | tail -n 1 || true)"
			printf 'ok    %-20s %-22s %4ds  %s\n' "./$rel" "$name" $((SECONDS - t0)) "$execs"
			continue
		fi
		printf 'FAIL  %-20s %-22s %4ds\n' "./$rel" "$name" $((SECONDS - t0))
		grep -vE '^fuzz: elapsed' "$log" | sed 's/^/      /' || true
		crasher="$(sed -n 's/.*Failing input written to \(testdata\/fuzz\/[^ ]*\).*/\1/p' "$log" | tail -n 1)"
		seed="$(sed -n 's/.*failure while testing seed corpus entry: \([^ ]*\).*/\1/p' "$log" | tail -n 1)"
		if [ -n "$crasher" ]; then
			echo "      new failing input: $rel/$crasher"
			echo "      re-run it:         $GO test -run '^${name}/$(basename "$crasher")\$' ./$rel"
		elif [ -n "$seed" ]; then
			echo "      a seed fails: $seed (an f.Add seed, or $rel/testdata/fuzz/$seed)"
			echo "      re-run it:    $GO test -run '^${seed}\$' ./$rel"
		fi
		failures+=("./$rel $name")
		if [ -z "$keep_going" ]; then
			echo "fuzz: $name failed after $((SECONDS - started))s (FUZZTIME=$fuzztime)" >&2
			exit 1
		fi
	done
done

if [ "${#failures[@]}" -gt 0 ]; then
	echo "fuzz: ${#failures[@]} of $count targets failed in $((SECONDS - started))s: ${failures[*]}" >&2
	exit 1
fi
echo "fuzz: $count targets, ${fuzztime} each, all passed in $((SECONDS - started))s (from $root)"
