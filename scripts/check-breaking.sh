#!/usr/bin/env bash
# make breaking: fails when openapi.yaml breaks its clients compared with the previous commit
# (or, with uncommitted changes to it, with HEAD). oasdiff (pinned in tools/oasdiff/go.mod, run by scripts/tool.sh)
# decides what breaks. A break that is meant says so: a commit trailer
#   API-Breaking-Change: <why, and what clients must do>
# on the commit that makes it (or CONTACTD_API_BREAKING="<why>" for uncommitted work) turns the
# failure into a report. CONTACTD_API_BASE=<ref> compares with another commit.
#
# One rule of oasdiff's is ours instead (tools/oasdiff/severity-levels.txt): a new value of an
# enum in a response (a new event type) is an addition. The spec says so to clients (enums in
# responses grow; handle values you do not know), as Stripe and GitHub do.
set -euo pipefail
cd "$(dirname "$0")/.."
oasdiff() { scripts/tool.sh tools/oasdiff/go.mod oasdiff "$@"; }

if [ -n "${CONTACTD_API_BASE:-}" ]; then
  base=$CONTACTD_API_BASE intended=${CONTACTD_API_BREAKING:-}
elif ! git diff --quiet HEAD -- openapi.yaml; then
  base=HEAD intended=${CONTACTD_API_BREAKING:-}
else
  base=HEAD~1
  intended=$(git log -1 --format='%(trailers:key=API-Breaking-Change,valueonly)' HEAD | head -1)
fi
# a shallow clone lacks the base: fetch one more commit of history rather than pass unchecked
if ! git cat-file -e "$base" 2>/dev/null && [ "$(git rev-parse --is-shallow-repository)" = true ]; then
  git fetch -q --deepen=1 origin 2>/dev/null || true
fi
if ! git cat-file -e "$base:openapi.yaml" 2>/dev/null; then
  cat >&2 <<MSG
breaking-change check: cannot read openapi.yaml at $base, so nothing was checked.
A shallow clone needs more history (git fetch --deepen=1), or name the spec to compare with:
CONTACTD_API_BASE=<commit> make breaking.
MSG
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git show "$base:openapi.yaml" >"$tmp/base.yaml"
# the same spec breaks nothing: no need to build oasdiff (a minute of CPU on a fresh machine)
if cmp -s "$tmp/base.yaml" openapi.yaml; then
  echo "breaking-change check: openapi.yaml is the same as at $base ($(git rev-parse --short "$base"))"
  exit 0
fi
if oasdiff breaking "$tmp/base.yaml" openapi.yaml --fail-on WARN --severity-levels tools/oasdiff/severity-levels.txt >"$tmp/report" 2>&1; then
  echo "breaking-change check: no breaking change against $base ($(git rev-parse --short "$base"))"
  exit 0
fi
cat "$tmp/report"
if [ -n "$intended" ]; then
  echo "breaking-change check: breaking changes above are declared intended: $intended"
  exit 0
fi
cat >&2 <<MSG
breaking-change check: openapi.yaml breaks clients compared with $base.
Fix the spec, or, if the break is intended, say why in the commit message with a trailer
  API-Breaking-Change: <why, and what clients must do>
(for uncommitted work: CONTACTD_API_BREAKING="<why>" make test), and add it to
docs/changelog.md.
MSG
exit 1
