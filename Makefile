# Gregor: the two commands a newcomer needs are `make run` and `make test`.

GO          ?= go
BIN         := bin/gregor
# Downloads (Apache Kafka jars, client packages) are cached here.
GREGOR_CACHE ?= $(CURDIR)/.cache
export GREGOR_CACHE
FUZZTIME    ?= 10s
# Kill -9 cycles of the crash test in make crash-test (make test runs 50).
CRASH_CYCLES ?= 200
# Leader kills of the cluster fault test in make cluster-test (make test runs 3).
CLUSTER_KILLS ?= 20
# The cluster fault tests make test leaves to make cluster-test.
CLUSTER_LONG_ONLY := ^TestFollowerWithFullDisk$$

.PHONY: build run run-cluster test unit race fuzz vet compat compat-cluster compat-security crash-test cluster-test soak bench clean

build:
	$(GO) build -o $(BIN) ./cmd/gregor

# Build and start a single-node broker on 127.0.0.1:9092 with data in ./data.
run: build
	./$(BIN) serve --listen 127.0.0.1:9092 --data-dir ./data

# Build and start a local three-node cluster (docs/operations.md): Kafka
# listeners 127.0.0.1:9092-9094, controllers 9192-9194, data in ./data/node-N.
run-cluster: build
	scripts/run-cluster.sh

# Everything CI runs: vet, the unit and integration tests (with the race
# detector on the concurrent packages), and a short run of every fuzz target.
test: vet unit race fuzz

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { gofmt -l .; echo "gofmt: files above need formatting"; exit 1; }
	$(GO) vet ./...
	$(GO) vet -tags cluster ./...

# The cluster fault tests run short here (clustertest/: 3 leader kills, a
# SIGSTOP and, as root, a leader cut off from its peers); the full-disk one
# only in make cluster-test. -tags cluster adds broker's in-process cluster
# tests to its single-node suite (docs/architecture.md, Tests), here and in
# race.
unit:
	$(GO) test -count=1 -tags cluster -skip '$(CLUSTER_LONG_ONLY)' ./...

race:
	$(GO) test -count=1 -race -tags cluster ./broker/... ./coordinator/... ./storage/... ./vfs/...

# The packages whose Fuzz targets make fuzz runs, one per line.
FUZZ_PKGS := \
	./protocol \
	./protocol/batch \
	./storage \
	./coordinator/group \
	./coordinator/txn \
	./coordinator/share \
	./coordinator/controller/metadata \
	./coordinator/controller/raftnode \
	./broker \
	./broker/partition \
	./broker/quota \
	./broker/security/listeners \
	./broker/security/principal \
	./broker/security/sasl \
	./broker/security/scram \
	./broker/security/ssl \
	./broker/share \
	./broker/topicconfig

# Each fuzz target runs briefly; longer runs: make fuzz FUZZTIME=10m.
# scripts/fuzz.sh retries a target once when Go 1.26's fuzz coordinator fails
# it at the deadline without a failing input (golang/go#75804).
fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) scripts/fuzz.sh $(FUZZ_PKGS)

# The hostile-client suite (broker/hostile_test.go) for a minute with more
# attackers; make test runs it for four seconds.
soak:
	GREGOR_SOAK=1 $(GO) test -count=1 -timeout 10m -run '^TestHostileClientsLeaveTheBrokerServing$$' -v ./broker

# The kill -9 crash test with many more cycles than make test runs: a child
# broker with log.flush.interval.messages=1 is SIGKILLed amid acknowledged
# produces and restarted; every acknowledged record must be there.
crash-test:
	CRASH_CYCLES=$(CRASH_CYCLES) $(GO) test -count=1 -timeout 30m -run '^TestCrashKill9KeepsAcknowledgedRecords$$' -v ./cmd/gregor

# The process-level fault tests of a three-node cluster (clustertest/): the
# partition leader kill -9ed CLUSTER_KILLS times during acks=all production,
# a leader paused with SIGSTOP past its session timeout, and, as root
# (skipped otherwise, saying why), a leader cut off from its peers with
# network namespaces and a follower whose disk fills; each history checked.
# make test runs all but the full disk, with 3 kills.
cluster-test:
	GREGOR_CLUSTER_KILLS=$(CLUSTER_KILLS) $(GO) test -count=1 -timeout 40m -v ./clustertest

# The compatibility matrix: real clients against Gregor and Apache Kafka.
compat: build
	$(MAKE) -C compat-tests compat

# The cluster matrix: real clients and Kafka's tools against three-node Gregor and Kafka clusters.
compat-cluster: build
	$(MAKE) -C compat-tests compat-cluster

# The security matrix: the clients over SASL_SSL with SCRAM-SHA-512 and over mTLS, against Gregor and Kafka.
compat-security: build
	$(MAKE) -C compat-tests compat-security

# Gregor and Apache Kafka side by side (bench/README.md, docs/performance.md):
# BENCH_ROUNDS, BENCH_QUICK=1, BENCH_CONSUME_BYTES, BENCH_MODES. Not part of
# test: it prints whether the targets are met and never fails on them.
bench: build
	$(GO) build -o bin/gregor-bench ./bench
	./bin/gregor-bench

clean:
	rm -rf bin
