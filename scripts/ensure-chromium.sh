#!/usr/bin/env bash
# Installs Debian's Chromium for the reference-page test (internal/consumer) when it is missing.
set -euo pipefail
command -v chromium >/dev/null && exit 0
echo "chromium not found: installing Debian's chromium package" >&2
"$(dirname "$0")/apt-install.sh" chromium
