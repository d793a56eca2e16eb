# Anvil: one module, five binaries, plus the deploy/ module (image builder, Kubernetes manifests).
# `make demo` and `make test` are the README's Quick start; `make image` is docs/DEPLOYMENT.md's.
GO      ?= go
BIN     ?= bin
PKGS    ?= ./...

# VERSION and REVISION are linked into anvil-router (`anvil-router version`) and carried by the
# image's OCI labels. VERSION is the nearest v* tag (without the v), else 0.0.0-dev; REVISION is the
# commit, with -dirty when tracked files differ from it.
VERSION  ?= $(or $(shell git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null | sed 's/^v//'),0.0.0-dev)
REVISION ?= $(or $(shell git rev-parse HEAD 2>/dev/null),unknown)$(shell git diff --quiet HEAD -- 2>/dev/null || { git rev-parse HEAD >/dev/null 2>&1 && echo -dirty; })
VERSION  := $(VERSION)
REVISION := $(REVISION)
LDFLAGS  := -X main.version=$(VERSION) -X main.revision=$(REVISION)

# The image: a static binary for GOOS=linux, file times from the last commit (reproducible).
IMAGE_DIR         ?= $(BIN)/image
IMAGE_ARCH        ?= $(shell $(GO) env GOARCH)
SOURCE_DATE_EPOCH ?= $(or $(shell git log -1 --format=%ct 2>/dev/null),0)
SOURCE_DATE_EPOCH := $(SOURCE_DATE_EPOCH)
CA_BUNDLE         ?= /etc/ssl/certs/ca-certificates.crt
IMAGE_OUT         := $(abspath $(IMAGE_DIR))

.PHONY: all build test vet lint fmtcheck race policy demo sim bench fuzz clean image deploytest deploylint manifest calibrate-fake

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/ ./cmd/...

# image builds the OCI layout and the docker-loadable tarball of anvil-router with no Docker daemon
# and no registry: the deploy module's builder starts from an empty image.
image:
	mkdir -p $(IMAGE_OUT)
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" \
		-o $(IMAGE_OUT)/anvil-router ./cmd/anvil-router
	cd deploy && $(GO) run ./cmd/anvil-image --binary $(IMAGE_OUT)/anvil-router --ca-bundle $(CA_BUNDLE) \
		--version $(VERSION) --revision $(REVISION) --arch $(IMAGE_ARCH) --source-date-epoch $(SOURCE_DATE_EPOCH) \
		--layout $(IMAGE_OUT)/oci --tarball $(IMAGE_OUT)/anvil-router.tar

# test is what CI runs: vet, staticcheck, gofmt, the race-enabled test suite, the simulator gates,
# then the deploy module (its own go.mod: the root's ./... does not reach it).
test: vet lint race policy simcheck deploytest

vet:
	$(GO) vet $(PKGS)

lint: fmtcheck deploylint
	$(GO) tool staticcheck $(PKGS)

fmtcheck:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# race runs every test with the race detector except the house-policy tests, which policy runs
# without it: they type-check the whole module (and a copy per planted violation) in go/packages and
# go/types, single-threaded library code where the detector finds nothing and costs seven times the
# time (55 s plain, 400-700 s under -race on a 2-core machine).
POLICY_TESTS := ^(TestHouseRules|TestPolicySubjectsExist|TestPolicyCatchesPlantedViolations)$$

race:
	$(GO) test -race -count=1 -timeout 30m -skip '$(POLICY_TESTS)' $(PKGS)

policy:
	$(GO) test -count=1 -run '$(POLICY_TESTS)' .

# simcheck runs every scenario's gates once the simulator exists.
simcheck:
	@if [ -d cmd/anvil-sim ]; then $(GO) run ./cmd/anvil-sim check scenarios/; fi

deploylint:
	cd deploy && $(GO) vet ./... && $(GO) tool staticcheck ./...

deploytest:
	cd deploy && $(GO) test -race -count=1 ./...

# manifest regenerates docs/CLI-COMMAND-MANIFEST.json from anvil-router's command tree; a test
# (TestManifestMatchesTheCommandTree) fails when the committed file drifts from it.
manifest:
	$(GO) run ./cmd/anvil-router manifest > docs/CLI-COMMAND-MANIFEST.json

demo:
	$(GO) run ./cmd/anvil-router serve --demo --drive 48

sim:
	$(GO) run ./cmd/anvil-sim run twenty-concurrent

# calibrate-fake runs the qualification's calibration phase against real fake-vLLM members on
# loopback and checks it recommends the ceiling the engine model implies (the simulator's sweep of the
# same profile, workload, seed and SLO), within one step; then the simulator's own calibration tests.
calibrate-fake:
	$(GO) test -count=1 -run 'TestCalibration' ./qualification/
	$(GO) test -count=1 ./internal/ceiling/ ./sim/calibrate/

# bench runs the Go benchmarks, then a short anvil-bench compare on loopback (fake members directly
# and behind the router); every report lands in bench/results/ (git-ignored).
bench:
	@mkdir -p bench/results
	@$(GO) test -run '^$$' -bench . -benchmem $(PKGS) > bench/results/go-bench.txt; status=$$?; \
		cat bench/results/go-bench.txt; exit $$status
	bench/demo-compare.sh

clean:
	rm -rf $(BIN)
