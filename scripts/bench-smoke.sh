#!/usr/bin/env bash
# The load tool's five modes on tiny datasets, side by side: each starts its own PostgreSQL
# and contactd and mostly waits (one-second slices, paced webhooks), so together they take
# about as long as the longest. Fails on any error, never on timing. Needs bin/contactd and
# bin/contactbench (make bench-tools).
set -uo pipefail
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
modes=(core dataout isolation bulk filters)
pids=()
for i in "${!modes[@]}"; do
  ./bin/contactbench "${modes[$i]}" -smoke >"$dir/$i" 2>&1 &
  pids+=($!)
done
rc=0
for i in "${!modes[@]}"; do
  status=0
  wait "${pids[$i]}" || status=$?
  echo "./bin/contactbench ${modes[$i]} -smoke"
  cat "$dir/$i"
  if [ "$status" -ne 0 ]; then echo "bench smoke: contactbench ${modes[$i]} -smoke failed ($status)"; rc=1; fi
done
exit $rc
