#!/usr/bin/env bash
# The cluster under load with nodes killed, then restarted in turn (a rolling restart): needs
# bin/contactd, redis-server and haproxy (make test-cluster installs and builds them; make test
# runs this beside the other tests).
set -euo pipefail
cd "$(dirname "$0")/.."
# -vet=off: make test vets every package in its go test (-vet=all); vetting here too, with go
# test's default analyzers, would vet every dependency again
CONTACTD_CLUSTER_TEST=1 exec ${GO:-go} test -vet=off -count=1 -timeout 6m -run TestCluster -v ./internal/clustertest/
