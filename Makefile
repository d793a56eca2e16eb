# Anvil: one module, five binaries. `make demo` and `make test` are the README's Quick start.
GO      ?= go
BIN     ?= bin
PKGS    ?= ./...

.PHONY: all build test vet lint fmtcheck race demo sim bench fuzz clean

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/...

# test is what CI runs: vet, staticcheck, gofmt, the race-enabled test suite, then the simulator gates.
test: vet lint race simcheck

vet:
	$(GO) vet $(PKGS)

lint: fmtcheck
	$(GO) tool staticcheck $(PKGS)

fmtcheck:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

race:
	$(GO) test -race -count=1 $(PKGS)

# simcheck runs every scenario's gates once the simulator exists.
simcheck:
	@if [ -d cmd/anvil-sim ]; then $(GO) run ./cmd/anvil-sim check scenarios/; fi

demo:
	$(GO) run ./cmd/anvil-router serve --demo --drive 48

sim:
	$(GO) run ./cmd/anvil-sim run twenty-concurrent

# bench runs the Go benchmarks, then a short anvil-bench compare on loopback (fake members directly
# and behind the router); every report lands in bench/results/ (git-ignored).
bench:
	@mkdir -p bench/results
	@$(GO) test -run '^$$' -bench . -benchmem $(PKGS) > bench/results/go-bench.txt; status=$$?; \
		cat bench/results/go-bench.txt; exit $$status
	bench/demo-compare.sh

clean:
	rm -rf $(BIN)
