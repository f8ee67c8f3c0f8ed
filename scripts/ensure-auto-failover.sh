#!/usr/bin/env bash
# Installs Debian's postgresql-15-auto-failover (pg_autoctl) when it is missing: the
# replicated PostgreSQL of `make cluster` and its failover test.
set -euo pipefail
if ! command -v pg_autoctl >/dev/null 2>&1; then
  echo "pg_autoctl not found: installing Debian's postgresql-15-auto-failover package" >&2
  "$(dirname "$0")/apt-install.sh" postgresql-15-auto-failover
fi
