#!/usr/bin/env bash
# Installs Debian's Chromium for the reference-page test (internal/consumer) when it is missing.
set -euo pipefail
command -v chromium >/dev/null && exit 0
echo "chromium not found: installing Debian's chromium package" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null
