#!/usr/bin/env bash
# Installs Debian's PostgreSQL server when no server binaries are on the machine, so that
# `make run` and `make test` work on a fresh Debian box. Nothing to do with DATABASE_URL set.
set -euo pipefail
if [ -n "${DATABASE_URL:-}" ] || [ -n "${CONTACTD_PG_BIN:-}" ]; then exit 0; fi
# an install in progress (apt-install.sh's lock) may be unpacking it: wait for it to end first
flock /tmp/contactd-apt-install.lock true 2>/dev/null || true
if compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null && id postgres >/dev/null 2>&1; then exit 0; fi
echo "PostgreSQL server binaries not found: installing Debian's postgresql package" >&2
"$(dirname "$0")/apt-install.sh" postgresql
