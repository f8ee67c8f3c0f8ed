#!/usr/bin/env bash
# make test: everything CI runs, each step timed so that where the time goes is in the log.
# The Debian packages (network and disk) install in the background while the generators run
# (CPU); the tests wait for them. Vet runs inside go test, and everything that does not need
# its results beside it: the cluster test, the bench smoke, the spec's lint and breaking check.
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
step "debian packages" scripts/ensure-test-packages.sh >"$pkglog" 2>&1 &
packages=$!
step "node tooling" $MAKE --no-print-directory node-deps
step "check-tree" $MAKE --no-print-directory check-tree
# Listed before the generators can rewrite gen/: the packages of the module without tests.
untested=$($GO list -f '{{if not (or .TestGoFiles .XTestGoFiles)}}{{.ImportPath}}{{end}}' ./...)
step "generate + freshness" $MAKE --no-print-directory check-generated
if ! wait "$packages"; then cat "$pkglog" >&2; exit 1; fi
cat "$pkglog" >&2
step "build" $MAKE --no-print-directory bench-tools
# The vet of the packages without tests, and of the cluster test, before anything runs beside
# go test: each go command compiles what it needs, and two started together compile the same
# packages twice (on a cold cache, the cluster test's and go test's dependencies were built by
# both at once). Vet builds the dependencies' export data, which go test then finds cached.
step "vet untested + deps" $GO vet $untested ./internal/clustertest/
# Everything that does not need go test's results runs beside it, each into its own log,
# printed after: the cluster test and the smoke runs spend most of their time waiting (paced
# load, HAProxy's checks, one-second slices), and so do go test's integration tests, which
# leaves a core free for the spec's lint and breaking-change check (go test runs every vet
# analyzer, -vet=all, on the packages it builds anyway).
declare -A beside=()
besides() { # besides NAME LOG COMMAND...: step NAME in the background
  local name=$1 log=$2
  shift 2
  step "$name" "$@" >"$log" 2>&1 &
  beside[$name]="$! $log"
}
besides "cluster" "$pkglog.cluster" scripts/test-cluster.sh
besides "bench smoke" "$pkglog.smoke" scripts/bench-smoke.sh
besides "lint + breaking" "$pkglog.lint" sh -c "$MAKE --no-print-directory lint && $MAKE --no-print-directory breaking"
besides "gofmt" "$pkglog.vet" $MAKE --no-print-directory fmt-check
rc=0
step "go test + vet" env CONTACTD_CONSUMER_TESTS=1 $GO test -vet=all -count=1 -timeout 8m ./... || rc=1
for name in "cluster" "bench smoke" "lint + breaking" "gofmt"; do
  read -r pid log <<<"${beside[$name]}"
  wait "$pid" || rc=1
  cat "$log" >&2
done
[ $rc -eq 0 ] || exit 1
printf 'make test: %-22s %6ss\n' "all" "$(secs "$t_all")" >&2
