#!/usr/bin/env bash
# Runs CI (`.ci/run` in a fresh clone) RUNS times on COMMIT beside a busy loop on every core,
# as issue 28 asks the suite to pass: a test that depends on the machine's speed fails here.
# Usage: scripts/under-load.sh [COMMIT] [RUNS]   (defaults: HEAD, 10). Prints a line per run
# and keeps each run's log in $TMPDIR/under-load/runN.log.
set -uo pipefail
cd "$(dirname "$0")/.."
commit=$(git rev-parse "${1:-HEAD}") runs=${2:-10}
out=${TMPDIR:-/tmp}/under-load
mkdir -p "$out"
hogs=()
for _ in $(seq "$(nproc)"); do
  (while :; do :; done) &
  hogs+=($!)
done
dir=""
# stopped, it ends the run under way too: its test binaries and servers work under $dir
trap 'kill "${hogs[@]}" 2>/dev/null; [ -z "$dir" ] || { pkill -9 -f -- "$dir/"; for p in /proc/[0-9]*; do case $(readlink "$p/cwd" 2>/dev/null) in "$dir"/*) kill -9 "${p#/proc/}" 2>/dev/null;; esac; done; rm -rf "$dir"; }' EXIT
passed=0
for i in $(seq "$runs"); do
  dir=$(mktemp -d)
  git clone -q "$PWD" "$dir/repo" && git -C "$dir/repo" checkout -q "$commit"
  start=$(date +%s)
  chmod 755 "$dir" && mkdir -m 1777 "$dir/tmp" # the run's test servers live here (PostgreSQL runs as postgres), and nothing else's
  (cd "$dir/repo" && TMPDIR="$dir/tmp" CI=true bash .ci/run) >"$out/run$i.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] && passed=$((passed + 1))
  echo "run $i of $runs: exit $rc in $(($(date +%s) - start)) s; $(grep 'make test: all' "$out/run$i.log" | tr -s ' ')"
  pkill -f "bin/postgres -D $dir/tmp/" 2>/dev/null # a failed run's test PostgreSQL, not another's
  rm -rf "$dir"
done
echo "$passed of $runs passed on $(git rev-parse --short "$commit") beside $(nproc) busy loops"
[ "$passed" -eq "$runs" ]
