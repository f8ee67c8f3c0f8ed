#!/usr/bin/env bash
# Installs, in one apt transaction, every Debian package make test needs that the machine lacks
# (PostgreSQL, Redis, HAProxy, Chromium, pgBackRest, pg_auto_failover, NATS): one `apt-get update` instead of one per package. The
# ensure-*.sh scripts stay the single-purpose entry points (make run, make cluster...) and
# are run afterwards for their after-install steps; they find everything present.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
missing=()
if [ -z "${DATABASE_URL:-}" ] && [ -z "${CONTACTD_PG_BIN:-}" ] &&
  ! { compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null && id postgres >/dev/null 2>&1; }; then
  missing+=(postgresql)
fi
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || missing+=(haproxy)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v pgbackrest >/dev/null 2>&1 || missing+=(pgbackrest)
command -v pg_autoctl >/dev/null 2>&1 || missing+=(postgresql-15-auto-failover)
command -v nats-server >/dev/null 2>&1 || [ -x /usr/sbin/nats-server ] || missing+=(nats-server)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing Debian's ${missing[*]}" >&2
  "$here/apt-install.sh" "${missing[@]}"
fi
for s in ensure-postgres ensure-redis ensure-haproxy ensure-chromium ensure-pgbackrest ensure-auto-failover ensure-nats; do "$here/$s.sh"; done
