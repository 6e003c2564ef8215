# Gregor: the two commands a newcomer needs are `make run` and `make test`.

GO          ?= go
BIN         := bin/gregor
# Downloads (Apache Kafka jars, client packages) are cached here.
GREGOR_CACHE ?= $(CURDIR)/.cache
export GREGOR_CACHE
FUZZTIME    ?= 10s

.PHONY: build run test unit race fuzz vet compat clean

build:
	$(GO) build -o $(BIN) ./cmd/gregor

# Build and start a single-node broker on 127.0.0.1:9092 with data in ./data.
run: build
	./$(BIN) serve --listen 127.0.0.1:9092 --data-dir ./data

# Everything CI runs: vet, the unit and integration tests (with the race
# detector on the concurrent packages), and a short run of every fuzz target.
test: vet unit race fuzz

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { gofmt -l .; echo "gofmt: files above need formatting"; exit 1; }
	$(GO) vet ./...

unit:
	$(GO) test -count=1 ./...

race:
	$(GO) test -count=1 -race ./broker/... ./coordinator/... ./storage/...

# Each fuzz target runs briefly; longer runs: make fuzz FUZZTIME=10m.
fuzz:
	@set -e; for pkg in ./protocol ./protocol/batch ./storage ./coordinator/group ./broker; do \
	  for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "fuzz $$pkg $$target"; \
	    $(GO) test -run='^$$' -fuzz="^$$target$$" -fuzztime=$(FUZZTIME) $$pkg; \
	  done; \
	done

# The compatibility matrix: real clients against Gregor and Apache Kafka.
compat: build
	$(MAKE) -C compat-tests compat

clean:
	rm -rf bin
