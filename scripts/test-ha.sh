#!/usr/bin/env bash
# The cluster on three PostgreSQL nodes (pg_auto_failover) under load with the primary lost:
# needs bin/contactd, redis-server, haproxy and pg_autoctl (make test-ha installs and builds
# them; make test runs this beside the other tests). CONTACTD_HA_LOSSES=1 also loses a standby
# and then the monitor under load (not in make test: see docs/operations.md).
set -euo pipefail
cd "$(dirname "$0")/.."
CONTACTD_HA_TEST=1 CONTACTD_HA_LOSSES=${CONTACTD_HA_LOSSES:-} exec ${GO:-go} test -vet=off -count=1 -timeout 7m -run TestClusterSurvivesPrimaryLoss -v ./internal/clustertest/
