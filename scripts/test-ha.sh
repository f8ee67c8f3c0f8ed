#!/usr/bin/env bash
# The cluster on three PostgreSQL nodes (pg_auto_failover) under load with the primary lost,
# then frozen, then a standby and the monitor lost: needs bin/contactd, redis-server, haproxy
# and pg_autoctl (make test-ha installs and builds them; make test runs this beside the other
# tests).
set -euo pipefail
cd "$(dirname "$0")/.."
CONTACTD_HA_TEST=1 exec ${GO:-go} test -vet=off -count=1 -timeout 7m -run TestClusterSurvivesPrimaryLoss -v ./internal/clustertest/
