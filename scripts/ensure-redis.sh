#!/usr/bin/env bash
# Installs Debian's redis-server when it is missing: the shared rate limits
# (CONTACTD_REDIS_URL) are tested against a real Redis, and `make cluster` runs one.
set -euo pipefail
if ! command -v redis-server >/dev/null 2>&1; then
  echo "redis-server not found: installing Debian's redis-server package" >&2
  "$(dirname "$0")/apt-install.sh" redis-server
fi
# the package starts a system Redis on 6379; contactd's tests and cluster start their own
if command -v systemctl >/dev/null 2>&1; then systemctl disable --now redis-server >/dev/null 2>&1 || true; fi
