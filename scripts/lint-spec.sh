#!/usr/bin/env bash
# make lint: openapi.yaml against Redocly's recommended rules plus the house rules of
# tools/redocly.yaml. Redocly exits 0 on warnings; here a warning fails like an error.
set -euo pipefail
cd "$(dirname "$0")/.."
redocly=tools/node/node_modules/.bin/redocly
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true
totals=$({ "$redocly" lint --config tools/redocly.yaml --format=json openapi.yaml 2>/dev/null || true; } |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const t=JSON.parse(s).totals;console.log(`${t.errors} ${t.warnings}`)})')
read -r errors warnings <<<"$totals"
if [ "$errors" != 0 ] || [ "$warnings" != 0 ]; then
  "$redocly" lint --config tools/redocly.yaml --format=codeframe openapi.yaml 2>&1 | grep -v -e '║' -e '═' >&2 || true
  echo "openapi.yaml: $errors errors, $warnings warnings (make lint wants none)" >&2
  exit 1
fi
echo "openapi.yaml: lint clean (Redocly $("$redocly" --version 2>/dev/null), recommended + tools/redocly.yaml)"
