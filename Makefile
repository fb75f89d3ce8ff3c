# ACKO — Aerospike CE operator. `make help` lists the targets.

SHELL = /usr/bin/env bash -o pipefail
.SHELLFLAGS = -ec

ROOT := $(CURDIR)
BIN := $(ROOT)/bin
CONTROLLER_GEN := $(BIN)/controller-gen
GOLANGCI_LINT := $(BIN)/golangci-lint
# Ginkgo's CLI, at the library's version (go.mod), for the e2e suite's parallel processes.
GINKGO := $(BIN)/ginkgo
# Parallel processes of `make test-e2e`, each on a test bed of its own (its specs mostly wait).
E2E_PROCS ?= 2
# Fuzz time per fuzz target in `make fuzz` (CI runs it as is).
FUZZTIME ?= 10s
# What `manager --version`, acko_build_info and the image's labels say; `make krew` needs a semver one.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
SOURCE ?= https://github.com/acko-io/acko
LDFLAGS := -X github.com/acko-io/acko/internal/version.Version=$(VERSION) \
	-X github.com/acko-io/acko/internal/version.Revision=$(REVISION)
# The OCI image tarball `make image` writes, and its platforms.
IMAGE_TAR ?= dist/acko-image.tar
IMAGE_PLATFORMS ?= amd64 arm64

# envtest binaries: a user's own KUBEBUILDER_ASSETS wins; otherwise they are built from source once.
ifeq ($(origin KUBEBUILDER_ASSETS), undefined)
ENVTEST_ASSETS = $$(hack/build-assets.sh | tail -n 1)
else
ENVTEST_ASSETS = $(KUBEBUILDER_ASSETS)
endif

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate the CRD, RBAC and webhook manifests from the markers, and copy them into the chart.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd webhook paths="./..." output:crd:artifacts:config=config/crd/bases
	hack/sync-chart.sh

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate the DeepCopy methods.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./..."

.PHONY: fmt
fmt: ## Run go fmt.
	go fmt ./...

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint (config: .golangci.yml; govet included).
	$(GOLANGCI_LINT) run ./...

.PHONY: lint-fix
lint-fix: $(GOLANGCI_LINT) ## Run golangci-lint and fix what it can.
	$(GOLANGCI_LINT) run --fix ./...

##@ Verify

.PHONY: verify
verify: lint verify-generated verify-modules ## What CI checks besides the tests: lint, vet, generated files and go.mod files up to date.

.PHONY: verify-generated
verify-generated: $(CONTROLLER_GEN) ## Fail if `make manifests generate fmt` would change any file.
	hack/verify-unchanged.sh "make manifests generate fmt" $(MAKE) --no-print-directory manifests generate fmt

.PHONY: verify-modules
verify-modules: ## Fail if `go mod tidy` would change go.mod or go.sum (the project's and hack/tools').
	hack/verify-unchanged.sh "go mod tidy" bash -c 'go mod tidy && cd hack/tools && go mod tidy'

##@ Test

.PHONY: envtest-assets
envtest-assets: ## Build etcd, kube-apiserver and kubectl from source into bin/assets (cached).
	@hack/build-assets.sh etcd kube-apiserver kubectl >/dev/null

.PHONY: local-assets
local-assets: ## Build every local-cluster binary (adds kube-controller-manager, kube-scheduler, kwok, helm).
	@hack/build-assets.sh etcd kube-apiserver kubectl kube-controller-manager kube-scheduler kwok helm >/dev/null

.PHONY: helm
helm: ## Build helm from source into bin/assets (cached).
	@hack/build-assets.sh helm >/dev/null

.PHONY: test
test: envtest-assets helm ## Unit and envtest suites (and the chart, with helm; the monitoring files, with promtool). Rewrites no file.
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" hack/test.sh

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME each.
	@hack/fuzz.sh $(FUZZTIME)

.PHONY: test-e2e
test-e2e: local-assets build $(GINKGO) ## End-to-end suite: local control planes (E2E_PROCS), kwok nodes, the real manager, kubectl, Prometheus.
	$(GINKGO) run -p --procs=$(E2E_PROCS) -v --timeout=40m --label-filter='!real' ./test/e2e/

# The real tier's e2e test bed: past the simulated suite's (0 to E2E_PROCS-1), so both run at once.
REAL_E2E_INSTANCE ?= 3
.PHONY: test-real
test-real: local-assets build ## Real Aerospike nodes (root; asd and as-tini-static in ACKO_ASD_DIR, default ../shared/aerospike-ce-8.1.2.0/bin): the launcher, the simulator's differential test, ACKO's pods as real nodes, and the e2e specs labelled real.
	ACKO_REAL=1 go test ./test/realnode/ ./test/differential/ -p 1 -v -count=1 -timeout 10m
	ACKO_REAL=1 go test ./test/localcluster/ -v -count=1 -timeout 10m -run Real
	ACKO_BACKEND=real ACKO_E2E_INSTANCE=$(REAL_E2E_INSTANCE) go test ./test/e2e/ -v -count=1 -timeout 30m -ginkgo.v \
		-ginkgo.label-filter=real

.PHONY: soak
soak: local-assets build ## The e2e scale sequence (1 → 2 → 3 → 5 → 3 → 1 → 3) 10 times; test-e2e runs it twice.
	ACKO_E2E_SCALE_CYCLES=10 go test ./test/e2e/ -v -count=1 -timeout 60m -ginkgo.v -ginkgo.label-filter=scale-sequence

# `make chaos`: random faults on a cluster under the workload (docs/development.md). CHAOS_SEED replays a
# run (a random one is drawn and printed when empty); BACKEND=real runs it on real asd nodes (root,
# ACKO_ASD_DIR; wrap it in flock /tmp/acko-real.lock).
CHAOS_DURATION ?= 10m
CHAOS_SEED ?=
CHAOS_TIMEOUT ?= 60m

.PHONY: chaos
chaos: local-assets build ## Random faults on a cluster under the workload for CHAOS_DURATION (CHAOS_SEED replays one; BACKEND=real on real asd nodes); not in CI.
	@seed="$(CHAOS_SEED)"; [ -n "$$seed" ] || seed=$$(od -An -N4 -tu4 /dev/urandom | tr -d ' '); \
	echo "chaos: seed $$seed for $(CHAOS_DURATION) (replay: make chaos CHAOS_SEED=$$seed CHAOS_DURATION=$(CHAOS_DURATION))"; \
	ACKO_BACKEND=$(BACKEND) CHAOS_SEED=$$seed CHAOS_DURATION=$(CHAOS_DURATION) go test ./test/e2e/ -v -count=1 -timeout $(CHAOS_TIMEOUT) \
		-ginkgo.v -ginkgo.label-filter=chaos

.PHONY: test-chart
test-chart: manifests helm ## Helm chart: helm lint, helm template goldens, RBAC equal to the generated rules.
	go test ./test/chart/ -count=1

.PHONY: test-monitoring
test-monitoring: ## Alert rules (promtool check and test) and the dashboard's metrics.
	go test ./test/monitoring/ -count=1

.PHONY: test-image
test-image: image ## Build the image tarball and check it: config, platforms, labels, the binary's --version.
	ACKO_IMAGE_TAR=$(ROOT)/$(IMAGE_TAR) ACKO_IMAGE_VERSION=$(VERSION) ACKO_IMAGE_REVISION=$(REVISION) \
		go test ./test/image/ -count=1

.PHONY: bench
bench: envtest-assets ## Benchmarks (API calls per reconcile, pause latency, restart overhead, probe cost).
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" go test ./... -run '^$$' -bench . -benchmem -benchtime 1x -count 1

# Clusters of 3 pods `make bench-scale` creates. BENCH_FLAGS adds e.g. -update; for N=100 it defaults to
# -compare, the check before a release (docs/performance.md).
N ?= 100
BENCH_FLAGS ?= $(if $(filter 100,$(N)),-compare)

.PHONY: bench-scale
bench-scale: local-assets build ## Scale bench on the local cluster with N clusters (docs/performance.md); not in CI.
	go run ./hack/benchscale -n $(N) $(BENCH_FLAGS)

# `make load`: SEED (host:port) defaults to the first pod of the sample of `make run-local`; LOAD_FLAGS adds
# e.g. -json or -keys 10000.
SEED ?=
DURATION ?= 60s
RATE ?= 500
LOAD_FLAGS ?=
# CLUSTER_NAME is the cluster-name the client accepts (the sample's; empty: any cluster behind SEED).
CLUSTER_NAME ?= aerospike-3node

.PHONY: load
load: ## Workload of the official client on the local cluster's sample (SEED, CLUSTER_NAME, DURATION, RATE); exits 1 if it lost keys.
	@seed="$(SEED)"; if [ -z "$$seed" ]; then \
		[ -f .local/kubeconfig ] || { echo "load: no .local/kubeconfig: start make run-local, or set SEED=host:port" >&2; exit 2; }; \
		kubectl="$$(hack/build-assets.sh kubectl | tail -n 1)/kubectl"; \
		ip=$$(KUBECONFIG=.local/kubeconfig "$$kubectl" -n aerospike get pods -l app.kubernetes.io/instance=aerospike-3node \
			--sort-by=.metadata.name -o jsonpath='{.items[0].status.podIP}') || true; \
		[ -n "$$ip" ] || { echo "load: no pod IP of aerospike/aerospike-3node: is make run-local up? Or set SEED=host:port" >&2; exit 2; }; \
		seed="$$ip:3000"; \
	fi; \
	echo "load: seed $$seed, $(DURATION) at $(RATE) ops/s"; \
	go run ./test/workload/cmd/load -seed "$$seed" -cluster-name "$(CLUSTER_NAME)" -duration $(DURATION) -rate $(RATE) $(LOAD_FLAGS)

##@ Build

.PHONY: build
build: ## Build the manager, kubectl-acko (and kubectl_complete-acko), the simulator and the stand-in init into bin/.
	go build -ldflags "$(LDFLAGS)" -o $(BIN)/manager ./cmd
	go build -o $(BIN)/kubectl-acko ./cmd/kubectl-acko
	go build -o $(BIN)/kubectl_complete-acko ./cmd/kubectl_complete-acko
	go build -o $(BIN)/aerosim ./cmd/aerosim
	go build -o $(BIN)/fakeinit ./test/fakeinit

.PHONY: krew
krew: ## Cross-build kubectl acko archives (linux/darwin, amd64/arm64) into dist/ and write dist/acko.yaml for krew.
	go run ./hack/krew -version $(VERSION) -out $(ROOT)/dist

.PHONY: run
run: manifests generate ## Run the manager against the cluster of the current kubeconfig.
	go run ./cmd --webhook-self-signed-url-host=127.0.0.1 --zap-devel

# BACKEND=real runs the sample of `make run-local` on real asd nodes (root, ACKO_ASD_DIR).
BACKEND ?=

.PHONY: run-local
run-local: local-assets build ## Local control plane, kwok nodes, simulator and manager (UP_FLAGS=--detach to return; BACKEND=real: the sample on real asd nodes, as root).
	ACKO_BACKEND=$(BACKEND) go run ./hack/localcluster up $(UP_FLAGS)

.PHONY: stop-local
stop-local: ## Stop the local cluster started by run-local (only the processes it started).
	go run ./hack/localcluster down

.PHONY: wipe-local
wipe-local: ## Stop the local cluster and delete its state.
	go run ./hack/localcluster wipe

.PHONY: image
image: ## OCI image tarball (linux/amd64 + linux/arm64) of the manager in $(IMAGE_TAR), without Docker.
	@for arch in $(IMAGE_PLATFORMS); do \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$arch go build -trimpath -ldflags "-s -w $(LDFLAGS)" \
			-o dist/linux-$$arch/manager ./cmd || exit 1; \
	done
	cd hack/tools && go run ./ociimage -out $(ROOT)/$(IMAGE_TAR) -version $(VERSION) -revision $(REVISION) \
		-source $(SOURCE) -created "$$(git log -1 --format=%cI 2>/dev/null || date -u +%FT%TZ)" \
		$(foreach arch,$(IMAGE_PLATFORMS),-platform linux/$(arch)=$(ROOT)/dist/linux-$(arch)/manager)
	@echo "wrote $(IMAGE_TAR): push it with crane or skopeo (docs/install.md)"

.PHONY: docker-build
docker-build: ## Build the manager image with Docker (the same shape as `make image`; needs a Docker engine).
	docker build --build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) -t $${IMG:-acko:dev} .

##@ Tools

$(CONTROLLER_GEN):
	cd hack/tools && go build -o $(CONTROLLER_GEN) sigs.k8s.io/controller-tools/cmd/controller-gen

$(GINKGO): go.mod
	go build -o $(GINKGO) github.com/onsi/ginkgo/v2/ginkgo

$(GOLANGCI_LINT):
	cd hack/tools && go build -o $(GOLANGCI_LINT) github.com/golangci/golangci-lint/v2/cmd/golangci-lint
