#!/usr/bin/env bash
# Installs Debian's haproxy when it is missing: `make cluster` puts it in front of the API
# processes, and `make test-cluster` kills nodes behind it.
set -euo pipefail
if ! { command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ]; }; then
  echo "haproxy not found: installing Debian's haproxy package" >&2
  "$(dirname "$0")/apt-install.sh" haproxy
fi
# the package starts a system HAProxy; the cluster starts its own
if command -v systemctl >/dev/null 2>&1; then systemctl disable --now haproxy >/dev/null 2>&1 || true; fi
