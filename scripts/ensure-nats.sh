#!/usr/bin/env bash
# Installs Debian's nats-server when it is missing: webhook subscriptions can target a NATS
# JetStream subject (docs/webhooks.md, "Queue destinations"), tested against a real server
# that each test starts for itself (internal/testkit/nats.go).
set -euo pipefail
if ! command -v nats-server >/dev/null 2>&1 && [ ! -x /usr/sbin/nats-server ]; then
  echo "nats-server not found: installing Debian's nats-server package" >&2
  "$(dirname "$0")/apt-install.sh" nats-server
fi
# the package may start a system server on 4222; contactd's tests start their own
if command -v systemctl >/dev/null 2>&1; then systemctl disable --now nats-server >/dev/null 2>&1 || true; fi
