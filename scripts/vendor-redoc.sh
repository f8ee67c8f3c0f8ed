#!/usr/bin/env bash
# Refreshes the Redoc bundle that contactd embeds for /docs: `scripts/vendor-redoc.sh 2.5.4`.
# npm pack checks the tarball against the registry's integrity hash; the bundle is stored
# gzipped (served as is to browsers that accept gzip) and its sha256 recorded in REDOC.md,
# which internal/docs's test compares with the embedded file.
set -euo pipefail
version=${1:?usage: scripts/vendor-redoc.sh <redoc version>}
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "redoc@$version" >/dev/null && tar xzf "redoc-$version.tgz")
bundle=$tmp/package/bundles/redoc.standalone.js
gzip -9 -n -c "$bundle" >internal/docs/redoc.standalone.js.gz
cp "$tmp/package/bundles/redoc.standalone.js.LICENSE.txt" internal/docs/redoc.standalone.js.LICENSE.txt
sum=$(sha256sum "$bundle" | cut -d' ' -f1)
sed -i -E "s/^- Version: .*/- Version: $version/; s/^- sha256 of redoc.standalone.js: .*/- sha256 of redoc.standalone.js: $sum/" internal/docs/REDOC.md
echo "redoc $version: $sum"
