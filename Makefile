# contactd — `make run` and `make test` do all the set-up; `make help` lists the rest.
SHELL := /bin/bash
GO    ?= go
# The generators are pinned in tools/go.mod (its tool directives) and built by the go command,
# nothing to install; scripts/tool.sh builds them without optimisation (why: its comment).
ROOT  := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))
TOOLS := GO="$(GO)" $(ROOT)/scripts/tool.sh tools/go.mod
# Pure-Go builds: sqlc then uses its wasm parser (no cgo), much faster to build cold.
export CGO_ENABLED ?= 0
# Builds that do not depend on where the clone is: a fresh clone (as CI makes) reuses the build
# cache of an earlier one instead of compiling every package of the module again.
export GOFLAGS ?= -trimpath

.PHONY: reliability soak test-fresh-machine bench-erasure schema generate-code ha-deps test-ha test-rolling backup-deps backup restore mutation bench-tools console-screenshots bench-bulk cluster cluster-down test-cluster haproxy-deps redis-deps bench-dataout bench-isolation bench-filters help deps node-deps browser-deps docs-screenshot bench bench-smoke build run generate check-generated fmt-check vet lint breaking unit test fuzz clean check-tree

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

deps: ## install what the machine lacks (PostgreSQL server binaries)
	@scripts/ensure-postgres.sh

node-deps: ## install the pinned Node tooling of tools/node (and Node.js when missing)
	@scripts/ensure-node.sh

redis-deps: ## install Debian's redis-server (the shared rate limits' tests, make cluster)
	@scripts/ensure-redis.sh

haproxy-deps: ## install Debian's haproxy (make cluster, make test-cluster)
	@scripts/ensure-haproxy.sh

browser-deps: ## install Debian's chromium for the /docs page test
	@scripts/ensure-chromium.sh

build: ## build bin/contactd
	$(GO) build -o bin/contactd ./cmd/contactd

backup-deps: ## install Debian's pgbackrest (make run's WAL archive, make backup, make restore)
	@scripts/ensure-pgbackrest.sh

BACKUP_DIR ?= .backup

run: deps backup-deps build ## start contactd on the embedded PostgreSQL (./.data, its WAL archived into ./.backup) and print a dev API key
	CONTACTD_BACKUP_DIR=$(BACKUP_DIR) ./bin/contactd serve

backup: deps backup-deps build ## back the embedded PostgreSQL (./.data) up into ./.backup with pgBackRest (FULL=1: a full backup; else differential after the first)
	CONTACTD_BACKUP_DIR=$(BACKUP_DIR) ./bin/contactd backup $(if $(FULL),--full)

restore: deps backup-deps build ## restore ./.data as it was at TO (RFC 3339) into the new directory INTO; then contactd serve --data-dir INTO
	CONTACTD_BACKUP_DIR=$(BACKUP_DIR) ./bin/contactd restore --to "$(TO)" --into "$(INTO)"

generate: schema generate-code ## regenerate sql/schema.sql from the migrations, gen/api + gen/client (oapi-codegen) and gen/db (sqlc) from openapi.yaml and sql/

schema: deps ## regenerate sql/schema.sql: the schema the migrations make, as pg_dump describes it (cmd/schemadump)
	$(GO) run ./cmd/schemadump > sql/schema.sql.new && mv sql/schema.sql.new sql/schema.sql

generate-code:
	$(TOOLS) sqlc generate
	$(TOOLS) oapi-codegen -config oapi-codegen.yaml openapi.yaml
	mkdir -p gen/client && $(TOOLS) oapi-codegen -config tools/oapi-codegen-client.yaml openapi.yaml

check-generated: ## fail when gen/ is not what the generators make of openapi.yaml and sql/, or is uncommitted
	@MAKE="$(MAKE)" scripts/check-generated.sh

fmt-check:
	@test -z "$$(gofmt -l cmd internal sql *.go)" || { gofmt -l cmd internal sql *.go; echo "run gofmt -w" >&2; exit 1; }

vet: fmt-check ## gofmt and go vet
	$(GO) vet ./...

lint: node-deps ## openapi.yaml against Redocly's recommended rules and ours: no errors, no warnings
	@scripts/lint-spec.sh

check-tree: ## fail when git tracks a compiled binary or a file over 1 MiB (build output belongs in bin/)
	@scripts/check-tree.sh

breaking: ## fail on a breaking change to openapi.yaml since the previous commit (oasdiff)
	@scripts/check-breaking.sh

unit: ## the tests without the database-backed packages' long ones
	$(GO) test -short ./...

test: ## everything CI runs: generation freshness, vet, lint, breaking changes, unit, integration, contract, consumers, cluster, bench smoke (each step timed)
	@MAKE="$(MAKE)" GO="$(GO)" scripts/test.sh

test-fresh-machine: ## make test as CI runs it on a new machine: a fresh clone in a Debian root made by debootstrap (DIR=/var/tmp/contactd-fresh), every cache empty, nothing installed but Go, gcc, git and Node.js (root; minutes)
	@scripts/test-fresh-machine.sh $(DIR)

cluster: deps redis-deps haproxy-deps ha-deps build ## HAProxy, 2 serve + 2 worker processes, replicated PostgreSQL (3 nodes, pg_auto_failover; CLUSTER_HA=0: one) and Redis on loopback (CLUSTER_PORT=8800); prints the URL and a key
	@scripts/cluster.sh up

test-cluster: deps redis-deps haproxy-deps build ## the cluster under load with nodes killed (SIGKILL) and restarted, then restarted in turn (SIGTERM): nothing acknowledged lost, no request of the rolling restart failed, every event delivered
	@GO="$(GO)" scripts/test-cluster.sh

ha-deps: ## install Debian's postgresql-15-auto-failover (make cluster, make test-ha)
	@scripts/ensure-auto-failover.sh

test-ha: deps redis-deps haproxy-deps ha-deps build ## the cluster on three PostgreSQL nodes (pg_auto_failover) under load with the primary lost (SIGKILL): nothing acknowledged lost, the failover window reported
	@scripts/test-ha.sh

test-rolling: deps redis-deps haproxy-deps build ## every contactd process of the cluster restarted in turn (SIGTERM) under writes sent once: none may fail (alone; make test-cluster runs it too)
	@CONTACTD_CLUSTER_TEST=1 $(GO) test -vet=off -count=1 -timeout 5m -run TestClusterRollingRestart -v ./internal/clustertest/

cluster-down: ## stop the cluster (PURGE=1: delete its data too)
	@scripts/cluster.sh down $(if $(PURGE),--purge)

bench: deps redis-deps bench-tools ## the load benchmark: 100k contacts, c=64, contactd vs a bare net/http+pgx baseline (BENCH_FLAGS=-profile bin/prof ...)
	./bin/contactbench $(BENCH_FLAGS)

bench-doc: deps redis-deps bench-tools ## make bench, its output written into docs/performance.md (the current table)
	@scripts/bench-doc.sh $(BENCH_FLAGS)

bench-dataout: deps bench-tools ## data out at scale: 1,000,000 contacts, list/search p99, export and events feed rates (BENCH_FLAGS=-contacts ...)
	./bin/contactbench dataout $(BENCH_FLAGS)

bench-isolation: deps bench-tools ## delivery isolation at scale: 200 subscriptions, healthy receivers' latency with and without a tenth hanging
	./bin/contactbench isolation $(BENCH_FLAGS)

bench-filters: deps bench-tools ## webhook payload filters' price: delivery throughput over 100 subscriptions without filters, with filters keeping every event, and leaving out half
	./bin/contactbench filters $(BENCH_FLAGS)

bench-erasure: deps ## erasure's cost at an account with 1,000,000 deliveries beside an empty one: buffers and time (the cost model's test, at scale)
	CONTACTD_ERASURE_HISTORY=1000000 $(GO) test -count=1 -timeout 30m -run 'TestErasureCostsThePersonsData$$' -v ./internal/costtest/ | grep -E 'erasing|^(---|ok|FAIL)'

bench-bulk: deps bench-tools ## bulk writes: 200,000 contacts by POST /contacts/batch vs a COPY of the same rows, then contactd import of a 1,000,000-row CSV
	./bin/contactbench bulk $(BENCH_FLAGS)

bench-smoke: deps redis-deps bench-tools ## the load tool's five modes for a few seconds each on tiny datasets, side by side: fails on any error, never on timing
	@scripts/bench-smoke.sh

bench-tools: build ## build bin/contactd and bin/contactbench
	$(GO) build -o bin/contactbench ./cmd/contactbench

console-screenshots: deps node-deps browser-deps ## drive the console in headless Chromium and keep its pages' screenshots in docs/console/
	@mkdir -p docs/console
	CONTACTD_CONSOLE_SCREENSHOTS=$(CURDIR)/docs/console $(GO) test -count=1 -run TestConsoleInABrowser ./internal/console/

docs-screenshot: node-deps browser-deps ## render /docs in headless Chromium and keep bin/docs.png
	@mkdir -p bin
	CONTACTD_SCREENSHOT_DIR=$(CURDIR)/bin $(GO) test -count=1 -run TestDocsPage ./internal/consumer/
	@echo "screenshot: bin/docs.png"

fuzz: ## run the fuzz targets for a while (FUZZTIME=30s each); make test runs their seeds
	$(GO) test -run XXX -fuzz FuzzParse -fuzztime $${FUZZTIME:-30s} ./internal/address/
	$(GO) test -run XXX -fuzz FuzzAPI -fuzztime $${FUZZTIME:-30s} ./internal/httpapi/
	$(GO) test -run XXX -fuzz FuzzAssign -fuzztime $${FUZZTIME:-30s} ./internal/apicore/
	$(GO) test -run XXX -fuzz FuzzFilter -fuzztime $${FUZZTIME:-30s} ./internal/segment/

# each target: the package to mutate, and the test packages that should notice; every domain
# package, and the statements of sql/queries (in their generated copies, gen/db)
MUTATE_TARGETS := \
	"-pkg ./internal/auth -tests ./internal/auth,./internal/httpapi,./internal/console,./internal/app" \
	"-pkg ./internal/idempotency -tests ./internal/idempotency,./internal/httpapi,./internal/erasure" \
	"-pkg ./internal/console" \
	"-pkg ./internal/delivery -tests ./internal/delivery,./internal/httpapi,./internal/erasure,./internal/platform/tracing -files ^(queue|worker|attempts|redeliver|replay|schedule|sign)\.go$$" \
	"-pkg ./internal/httpapi -files ^(contacts_list_export|idempotency)\.go$$" \
	"-pkg ./internal/ratelimit -tests ./internal/ratelimit,./internal/httpapi" \
	"-pkg ./internal/field -tests ./internal/field,./internal/httpapi" \
	"-pkg ./internal/segment -tests ./internal/segment,./internal/httpapi" \
	"-pkg ./internal/contact -tests ./internal/contact,./internal/httpapi,./internal/erasure,./internal/enrich" \
	"-pkg ./internal/erasure -tests ./internal/erasure,./internal/httpapi" \
	"-pkg ./internal/event -tests ./internal/event,./internal/httpapi,./internal/delivery" \
	"-pkg ./internal/subscription -tests ./internal/httpapi,./internal/delivery" \
	"-pkg ./internal/suppression -tests ./internal/suppression,./internal/erasure,./internal/httpapi" \
	"-pkg ./internal/enrich -tests ./internal/enrich,./internal/httpapi" \
	"-pkg ./internal/platform/store -tests ./internal/platform/store,./internal/httpapi" \
	"-pkg ./gen/db -sql . -tests ./internal/contact,./internal/segment,./internal/erasure,./internal/enrich,./internal/delivery,./internal/httpapi"
mutation: deps browser-deps node-deps ## mutation tests of every domain package and of the SQL (many hours): fails on a survivor not judged equivalent in cmd/mutate/equivalent.txt, or a score below docs/development.md's (MUTATE='-pkg ./internal/auth' for one)
	@scripts/mutation.sh $(if $(MUTATE),"$(MUTATE)",$(MUTATE_TARGETS))

reliability: deps redis-deps haproxy-deps ha-deps build ## the cluster's fault tests with a larger history, each checked for linearizability (porcupine) and its webhook ledger; writes docs/reliability.md (HISTORY_WORKERS=6)
	@scripts/reliability.sh

soak: deps ## the segment model over random seeds (SOAK_RUNS=20), each run's seed printed: CONTACTD_MODEL_SEED=N runs a failure's again
	@for i in $$(seq $${SOAK_RUNS:-20}); do \
		out=$$(CONTACTD_MODEL_SEED=random go test -count=1 -v -run 'TestSegmentMembershipModel' ./internal/httpapi 2>&1); rc=$$?; \
		echo "$$out" | grep -E 'seed [0-9]+: |FAIL|segment_model_test'; [ $$rc -eq 0 ] || exit 1; \
	done

clean: ## remove build output (not ./.data)
	rm -rf bin
