#!/usr/bin/env bash
# make check-generated: fails when sql/schema.sql is not what the migrations make, or gen/ is
# not exactly what `make generate` makes of openapi.yaml and sql/ now (stale, edited by hand,
# or a file left over), or when either has changes that are not committed.
#
# The generators run on a scratch copy of their inputs into an empty gen/, so this check never
# writes the tree: make test builds and vets the module beside it, and a generator rewriting a
# file the compiler is reading would fail that build for nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/tools" "$scratch/gen/api" "$scratch/gen/client" "$scratch/gen/db"
cp -r openapi.yaml oapi-codegen.yaml sqlc.yaml sql go.mod go.sum "$scratch/"
cp tools/oapi-codegen-client.yaml "$scratch/tools/"
# oapi-codegen resolves the packages its type mappings import (internal/apitime) in the module
ln -s "$PWD/internal" "$scratch/internal"
scripts/ensure-postgres.sh # the dump runs the migrations on a throwaway cluster (make test installs it beside)
${GO:-go} run ./cmd/schemadump >"$scratch/schema.sql"
if ! diff "$scratch/schema.sql" sql/schema.sql >"$scratch/diff"; then
  head -c 20000 "$scratch/diff"
  echo "sql/schema.sql is not what the migrations make: run 'make generate' and commit" >&2
  exit 1
fi
${MAKE:-make} --no-print-directory -C "$scratch" -f "$PWD/Makefile" generate-code
if ! diff -r "$scratch/gen" gen >"$scratch/diff"; then
  head -c 20000 "$scratch/diff"
  echo "gen/ is not what the generators make of openapi.yaml and sql/: run 'make generate' and commit" >&2
  exit 1
fi
if [ -n "$(git status --porcelain --untracked-files=all -- gen/ sql/schema.sql)" ]; then
  git status --short -- gen/ sql/schema.sql
  echo "gen/ and sql/schema.sql are fresh but not committed: commit them" >&2
  exit 1
fi
echo "sql/schema.sql is what the migrations make, and gen/ what the generators make of openapi.yaml and sql/"
