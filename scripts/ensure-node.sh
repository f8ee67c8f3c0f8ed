#!/usr/bin/env bash
# Makes the pinned Node tooling of tools/node (spec linter, TypeScript client generator and
# runtime, Standard Webhooks verifier) ready: Node.js from Debian when the machine has none, then
# `npm ci` from the committed lock file whenever the lock changed since the last install.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../tools/node"
need_major=20
node_ok() { command -v node >/dev/null && command -v npm >/dev/null &&
  [ "$(node -p 'process.versions.node.split(".")[0]')" -ge "$need_major" ]; }
if ! node_ok; then
  echo "Node.js >= $need_major not found: installing Debian's nodejs and npm" >&2
  "$here/apt-install.sh" nodejs npm
  node_ok || { echo "Node.js $(node --version 2>/dev/null) is too old: tools/node needs >= $need_major" >&2; exit 1; }
fi
stamp=node_modules/.installed-lock
if ! cmp -s package-lock.json "$stamp"; then
  npm ci --no-audit --no-fund --loglevel=error
  cp package-lock.json "$stamp"
fi
