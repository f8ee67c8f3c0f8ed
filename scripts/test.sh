#!/usr/bin/env bash
# make test: everything CI runs, each step timed so that where the time goes is in the log.
# On a fresh machine most of the time is compiling (the module, the pinned tools) and waiting
# on the network (modules, Debian packages, npm): so the Debian packages, the Node tooling and
# the generators' freshness check (which builds the generators) run in the background while the
# module builds, and the tests wait for what they need. Vet runs inside go test, on every
# package of the module, tests or not (go vet's results are not go test -vet's: run apart,
# every dependency was vetted twice), and everything that does not need its results runs
# beside it: the cluster test, the bench smoke, the spec's lint and breaking check.
set -euo pipefail
cd "$(dirname "$0")/.."
MAKE=${MAKE:-make}
GO=${GO:-go}
t_all=$(date +%s%3N)
secs() { local ms=$(($(date +%s%3N) - $1)); printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100)); }
step() { # step NAME COMMAND...: runs it and prints how long it took
  local name=$1 t0 rc=0
  shift
  t0=$(date +%s%3N)
  "$@" || rc=$?
  printf 'make test: %-22s %6ss%s\n' "$name" "$(secs "$t0")" "$([ $rc -eq 0 ] || echo "  FAILED ($rc)")" >&2
  return $rc
}
pkglog=$(mktemp)
trap 'rm -f "$pkglog" "$pkglog".*' EXIT
background() { # background NAME COMMAND...: step NAME in the background, into its own log
  local name=$1 log="$pkglog.${#started[@]}"
  shift
  step "$name" "$@" >"$log" 2>&1 &
  started[$name]="$! $log"
}
waitfor() { # waitfor NAME: waits for a background step and prints its log; fails when it failed
  local pid log rc=0
  read -r pid log <<<"${started[$1]}"
  wait "$pid" || rc=$?
  cat "$log" >&2
  return $rc
}
declare -A started=()
background "debian packages" scripts/ensure-test-packages.sh
background "node tooling" $MAKE --no-print-directory node-deps
# the generators run on a scratch copy (scripts/check-generated.sh): the build may read gen/
background "generate + freshness" $MAKE --no-print-directory check-generated
step "check-tree" $MAKE --no-print-directory check-tree
step "build" $MAKE --no-print-directory bench-tools
waitfor "debian packages"
waitfor "node tooling"
# Everything that does not need go test's results runs beside it, each into its own log,
# printed after: the cluster test and the smoke runs spend most of their time waiting (paced
# load, HAProxy's checks, one-second slices), and so do go test's integration tests, which
# leaves a core free for the spec's lint and breaking-change check (go test runs every vet
# analyzer, -vet=all, on the packages it builds anyway).
background "cluster" scripts/test-cluster.sh
background "failover" scripts/test-ha.sh
background "bench smoke" scripts/bench-smoke.sh
background "lint + breaking" sh -c "$MAKE --no-print-directory lint && $MAKE --no-print-directory breaking"
background "gofmt" $MAKE --no-print-directory fmt-check
rc=0
# test binaries are linked without DWARF (-w): a fifth less link time, and nothing reads it
step "go test + vet" env CONTACTD_CONSUMER_TESTS=1 $GO test -vet=all -ldflags=-w -count=1 -parallel 4 -timeout 8m ./... || rc=1
for name in "generate + freshness" "cluster" "failover" "bench smoke" "lint + breaking" "gofmt"; do
  waitfor "$name" || rc=1
done
[ $rc -eq 0 ] || exit 1
printf 'make test: %-22s %6ss\n' "all" "$(secs "$t_all")" >&2
