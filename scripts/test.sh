#!/usr/bin/env bash
# make test: everything CI runs, each step timed so that where the time goes is in the log.
# The Debian packages (network and disk) install in the background while the generators,
# vet and the lint run (CPU); the tests wait for them. On a fresh machine the installs are
# the largest step, so overlapping them is the biggest cut.
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
trap 'rm -f "$pkglog"' EXIT
step "debian packages" scripts/ensure-test-packages.sh >"$pkglog" 2>&1 &
packages=$!
step "node tooling" $MAKE --no-print-directory node-deps
step "check-tree" $MAKE --no-print-directory check-tree
step "generate + freshness" $MAKE --no-print-directory check-generated
step "vet" $MAKE --no-print-directory vet
step "lint" $MAKE --no-print-directory lint
step "breaking" $MAKE --no-print-directory breaking
if ! wait "$packages"; then cat "$pkglog" >&2; exit 1; fi
cat "$pkglog" >&2
step "go test" env CONTACTD_CONSUMER_TESTS=1 $GO test -count=1 -timeout 8m ./...
step "cluster" $MAKE --no-print-directory test-cluster
step "bench smoke" $MAKE --no-print-directory bench-smoke
printf 'make test: %-22s %6ss\n' "all" "$(secs "$t_all")" >&2
