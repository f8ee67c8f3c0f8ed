#!/usr/bin/env bash
# tool.sh MODFILE NAME [ARGS...]: runs the tool NAME pinned by a `tool` directive of MODFILE
# (tools/go.mod, tools/oasdiff/go.mod), as `go tool -modfile=MODFILE NAME` would: the go
# command builds it from the pinned module versions, nothing is installed by hand.
#
# Why not `go tool` itself: it takes no build flags, and on a fresh machine building the tools
# is the largest single cost of `make test`. Built without optimisation or DWARF (they run for
# a second or two), sqlc builds in 90 s instead of 132 s on 2 cores, oasdiff in 79 CPU-seconds
# instead of 102, and sqlc generate takes 3.8 s instead of 2.4 (docs/development.md).
# `go run` keeps the linked binary in the build cache, as `go tool` does, so a fresh clone
# neither builds nor links it again. MODFILE is relative to the repository; the tool runs in
# the caller's directory, which must hold a go.mod (-modfile needs one to find its root).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
modfile=$1 name=$2
shift 2
pkg=$(sed -n 's/^[[:space:]]*\(tool[[:space:]]\+\)\{0,1\}\([^[:space:]()]*\/'"$name"'\)$/\2/p' "$root/$modfile" | head -1)
if [ -z "$pkg" ]; then
  echo "tool.sh: $modfile has no tool directive for $name" >&2
  exit 2
fi
exec ${GO:-go} run -modfile="$root/$modfile" '-gcflags=all=-N -l' -ldflags=-w "$pkg" "$@"
