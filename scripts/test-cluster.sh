#!/usr/bin/env bash
# The cluster under load with nodes killed: needs bin/contactd, redis-server and haproxy
# (make test-cluster installs and builds them; make test runs this beside the other tests).
set -euo pipefail
cd "$(dirname "$0")/.."
CONTACTD_CLUSTER_TEST=1 exec ${GO:-go} test -count=1 -timeout 3m -run TestCluster -v ./internal/clustertest/
