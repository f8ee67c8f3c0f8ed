#!/usr/bin/env bash
# make mutation: cmd/mutate on each target given, then each target's score written into
# docs/development.md's table. Fails when a target left a survivor that cmd/mutate/equivalent.txt
# does not judge equivalent, or its score fell below the table's.
set -uo pipefail
GO=${GO:-go}
runs=$(mktemp)
trap 'rm -f "$runs"' EXIT
status=0
for target in "$@"; do
  # shellcheck disable=SC2086 # a target is flags, split on spaces
  $GO run ./cmd/mutate $target -score "$runs" || status=1
done
if [ -s "$runs" ]; then
  $GO run ./cmd/mutate -write-scores "$runs" -doc docs/development.md || status=1
  echo "mutation: the scores are in docs/development.md" >&2
fi
exit $status
