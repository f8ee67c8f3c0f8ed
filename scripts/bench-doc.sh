#!/usr/bin/env bash
# make bench-doc: runs the load benchmark (make bench) and writes what it printed into
# docs/performance.md between the bench markers, so the table there is a run's output, not
# retyped. Arguments go to contactbench.
set -euo pipefail
doc=docs/performance.md
grep -q '^<!-- bench:begin' "$doc" && grep -q '^<!-- bench:end' "$doc" || { echo "$doc has no bench markers" >&2; exit 1; }
out=$(mktemp) report=$(mktemp)
trap 'rm -f "$out" "$report"' EXIT
./bin/contactbench "$@" | tee "$out"
# the report, from its title line on: its title a paragraph, its tables as they are, each
# other line an item of a list
awk '/^contactbench [0-9][0-9][0-9][0-9]-/ && !p {p = 1; print; print ""; next}
     !p || /^ *$/ {next}
     /^\|/ {if (!t) print ""; print; t = 1; next}
     {if (t) print ""; sub(/^ +/, ""); print "- " $0; t = 0}' "$out" | cat -s >"$report"
[ -s "$report" ] || { echo "contactbench printed no report" >&2; exit 1; }
cp "$report" "$out"
awk 'FNR == NR {r = r $0 "\n"; next}
     /^<!-- bench:begin/ {print; printf "%s", r; skip = 1; next}
     /^<!-- bench:end/ {skip = 0}
     !skip' "$out" "$doc" >"$doc.new"
mv "$doc.new" "$doc"
echo "bench-doc: wrote the run into $doc" >&2
