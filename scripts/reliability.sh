#!/usr/bin/env bash
# make reliability: the cluster's fault tests with a larger history of single-contact
# operations (HISTORY_WORKERS, 6) and a switchover too, each checked for linearizability and its webhook ledger,
# and docs/reliability.md written from what they measured.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export CONTACTD_RELIABILITY_DIR=$dir CONTACTD_HISTORY_WORKERS=${HISTORY_WORKERS:-6} CONTACTD_SWITCHOVER=1
bash scripts/test-ha.sh
CONTACTD_CLUSTER_TEST=1 ${GO:-go} test -vet=off -count=1 -timeout 6m -run TestClusterSurvivesKilledNodes -v ./internal/clustertest/
{
	cat <<'EOF'
# Reliability

This page is written by `make reliability`: the text is the script's, the figures are its
last run's. `make test` runs the same tests with a smaller history (one worker each) and no switchover.

## What is promised

- **Each contact is linearizable.** Through HAProxy, while PostgreSQL's primary is killed,
  frozen or switched over, a standby or the monitor is lost, and API and delivery processes
  are killed, every create, read, rename, tag and erasure of one contact takes effect at one instant between
  its request and its answer, in an order that one copy of the contact explains: no stale
  read after an answered write, no lost tag, no erased contact coming back. A client that
  retries a write with its `Idempotency-Key` until it is answered has it applied once.
- **Nothing acknowledged is lost**, and no retried create is stored twice.
- **Writes resume** within 15 s of the primary's loss, and within 5 s of a standby's or the
  monitor's ([operations.md](operations.md#replicated-postgresql-and-failover)).
- **Every webhook event is delivered at least once**: each event of a subscribed type has
  its delivery, and each delivery is delivered, pending or given up; with the receiver up,
  all are delivered. A second delivery of an event carries the same `webhook-id` and the same
  body, or the event's tombstone once its contact was erased ([webhooks.md](webhooks.md)).

## How it is tested

- `internal/clustertest/failover_test.go` (`make test-ha`) runs three PostgreSQL nodes under
  pg_auto_failover behind two API processes, two workers and HAProxy; it kills the primary
  (SIGKILL, keeper and PostgreSQL), freezes the next one (SIGSTOP), switches over to a
  standby (`pg_autoctl perform switchover`; here only), kills a standby and then the monitor,
  each under load, and bounds the windows above.
  `internal/clustertest/cluster_test.go` (`make test-cluster`) kills an API process and a
  worker under load and starts them again.
- Beside the load of each, workers send single-contact operations and record each one's
  call and answer (`internal/clustertest/history_test.go`). A write is retried with its key
  until answered and counts from its first attempt; a read that failed did nothing and counts
  from the attempt that was answered. [Porcupine](https://github.com/anishathalye/porcupine)
  checks the history per contact against a model of one copy of the contact
  (`TestHistoryModel` shows the model refusing a stale read, a read going back in time, a
  lost tag and an erased contact returning).
- The ledger is read from the database after the receiver has every event: events of the
  subscribed type, deliveries by status, and the receiver's requests and second deliveries.
- Segment membership, which every write keeps, is judged after every test by an oracle apart
  from the product ([development.md](development.md#tests)).

## The last run

EOF
	cat "$dir"/*.md
} > docs/reliability.md
echo "docs/reliability.md written"
