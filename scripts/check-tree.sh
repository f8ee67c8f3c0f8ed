#!/usr/bin/env bash
# make check-tree: the repository holds sources, not build output. Fails on a tracked file that
# is an executable binary (ELF, Mach-O, PE) or over 1 MiB, which is how a built `contactbench`
# once landed at the root.
set -euo pipefail
cd "$(dirname "$0")/.."
max=$((1024 * 1024))
bad=0
while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue
  magic=$(head -c 4 "$f" | od -An -tx1 | tr -d ' \n')
  case "$magic" in
    7f454c46|cffaedfe|cefaedfe|feedface|feedfacf|4d5a*)
      echo "check-tree: $f is a compiled binary: build output goes to bin/ (ignored)" >&2; bad=1; continue ;;
  esac
  size=$(stat -c %s "$f")
  if [ "$size" -gt "$max" ]; then
    echo "check-tree: $f is $((size / 1024)) KiB (over 1 MiB): keep build output and data dumps out of git" >&2; bad=1
  fi
done < <(git ls-files -z)
[ "$bad" = 0 ] && echo "check-tree: no binaries or oversized files tracked"
exit "$bad"
