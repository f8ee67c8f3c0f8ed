#!/usr/bin/env bash
# Installs Debian's pgbackrest when it is missing: contactd's backups and point-in-time
# restores (make backup, the restore drill of make test) are pgBackRest's.
set -euo pipefail
if ! command -v pgbackrest >/dev/null 2>&1; then
  echo "pgbackrest not found: installing Debian's pgbackrest package" >&2
  "$(dirname "$0")/apt-install.sh" pgbackrest
fi
