# ferry — make targets. `make test` is what CI runs (.ci/run).
GO        ?= go
BIN       := bin/ferry
PKGS      := ./...
TEST_FLAGS ?= -race -timeout 20m

.PHONY: build run test test-long test-deps vet fmt-check bench bench-compaction bench-go bench-http bench-kafka bench-cluster bench-registry bench-tls bench-txn fuzz clean openapi

# Kafka's script names (kafka-topics.sh, …) are links to the binary, which
# behaves by the name it is run as.
build:
	$(GO) build -o $(BIN) ./cmd/ferry
	./$(BIN) install-scripts $(dir $(BIN))

run: build
	./$(BIN) serve

# Installs what the tests need where it is missing, then runs every test.
test: test-deps fmt-check vet build
	$(GO) test $(TEST_FLAGS) $(PKGS)

# Long variants (FERRY_LONG=1), e.g. 50,000 partitions on one node with
# their create, restart time and RSS logged, every network partition
# nemesis three rounds each (test/partition), franz-go's TestTxnEtl and
# librdkafka's own transaction and idempotence tests in full
# (test/cluster); not part of `make test`.
test-long: build test-deps
	FERRY_LONG=1 $(GO) test -count=1 -v -run Long -timeout 30m ./test/e2e/
	FERRY_LONG=1 $(GO) test -count=1 -v -run "LeaderKills|LongFreeze" -timeout 30m ./test/cluster/
	FERRY_LONG=1 $(GO) test -count=1 -v -run "PartitionNemeses" -timeout 80m ./test/partition/
	FERRY_LONG=1 $(GO) test -count=1 -v -run "TestLongFranzGoTxnEtl|TestLibrdkafkaOwnTransactionTests" -timeout 30m ./test/cluster/

test-deps:
	./scripts/install-test-deps.sh

vet:
	$(GO) vet $(PKGS)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# Benchmarks: Go micro-benchmarks, HTTP against a no-op baseline, then the
# Kafka protocol against an in-process franz-go kfake cluster.
bench: bench-go bench-http bench-kafka bench-cluster bench-registry bench-tls bench-compaction bench-txn

bench-go:
	$(GO) test -run '^$$' -bench . -benchmem -count 3 ./storage/... ./server/... ./api/...

# Compaction: one cleaner pass over a 1 GiB log (1% and 50% unique keys,
# MB/s), acks=all produce p50/p99 while the cleaner runs vs with it off
# (p99-ratio, target <= 1.2), and the group coordinator's load time for
# 1M commits before and after compaction (FERRY_BENCH_COMMITS to change).
bench-compaction:
	FERRY_BENCH_CLEANER_BYTES=1073741824 $(GO) test -run '^$$' -bench 'BenchmarkCleaner$$' -benchtime 1x -count 3 -timeout 30m ./storage/
	$(GO) test -run '^$$' -bench 'BenchmarkProducePWhileCleaning|BenchmarkCoordinatorLoadCompacted' -benchtime 1x -count 3 -timeout 60m ./test/e2e/

# Transactions on three brokers: transactional vs idempotent produce at
# 10, 100 and 1,000 records per transaction (records/s, medians of three
# rounds, txn/idem ratios; targets >= 0.85 at 1,000, >= 0.60 at 100, beside
# floor/idem, the bound of any transaction: the idempotent loop with one
# acknowledged write per loop, docs/transaction-throughput.md), one
# producer of each and then four (BenchmarkTxnProduceConcurrent,
# FERRY_BENCH_PRODUCERS), and produce-to-read_committed-consumer latency
# p50/p99 (FERRY_BENCH_WINDOW per measurement, default 5s).
bench-txn:
	$(GO) test -run '^$$' -bench 'BenchmarkTxnProduce|BenchmarkTxnEndToEnd' -benchtime 1x -count 1 -timeout 30m ./test/cluster/

bench-http: build
	./scripts/bench-http.sh

# RECORDS (2000000), DURATION (20s), PARTITIONS (4), ROUNDS (3, medians) shape the run.
bench-kafka: build
	./scripts/bench-kafka.sh

# Replication: three brokers and ZooKeeper, RF3 vs RF1, then failover time
# after kill -9, controlled shutdown and a partitioned leader (FAILOVERS,
# default 3; scripts/bench-cluster.sh).
bench-cluster: build
	./scripts/bench-cluster.sh

# Schema registry on PostgreSQL: registrations/s (8 HTTP writers, new
# subjects and new versions) and lookups by id/s per schema type; then
# lookups by id on a broker not leading _schemas, with wrk, against a no-op
# baseline (scripts/bench-registry.sh; ROUNDS, REGISTRATIONS, LOOKUP_DURATION,
# DURATION, CLUSTER=0 to skip the cluster part).
bench-registry: build
	./scripts/bench-registry.sh

# Kafka produce and consume over an SSL listener against a PLAINTEXT one of
# the same node, in the same run (scripts/bench-tls.sh; RECORDS, DURATION,
# ROUNDS); fails when TLS costs more than 35%.
bench-tls: build
	./scripts/bench-tls.sh

# Short fuzzing of every decoder (FUZZTIME per target, default 20s).
fuzz:
	./scripts/fuzz.sh

# Regenerates openapi/ (swagger.json/.yaml, openapi3.json/.yaml) from the swag
# annotations on the handlers, with this swag (openapi/internal/specgen pins
# the same; its test fails when the committed files are stale).
SWAG_VERSION := v1.16.6
SWAG_BIN     := bin/tools/swag-$(SWAG_VERSION)

openapi:
	GOBIN=$(CURDIR)/$(SWAG_BIN) $(GO) install github.com/swaggo/swag/cmd/swag@$(SWAG_VERSION)
	$(GO) run ./openapi/gen -swag $(SWAG_BIN)/swag -out openapi

clean:
	rm -rf bin
