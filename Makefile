# ACKO — Aerospike CE operator. `make help` lists the targets.

SHELL = /usr/bin/env bash -o pipefail
.SHELLFLAGS = -ec

ROOT := $(CURDIR)
BIN := $(ROOT)/bin
CONTROLLER_GEN := $(BIN)/controller-gen
GOLANGCI_LINT := $(BIN)/golangci-lint
# Fuzz time per fuzz target in `make fuzz` (CI runs it as is).
FUZZTIME ?= 10s
# Version of the kubectl plugin's release archives and krew manifest (`make krew`).
VERSION ?= v0.1.0

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
manifests: $(CONTROLLER_GEN) ## Generate the CRD, RBAC and webhook manifests from the markers.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd webhook paths="./..." output:crd:artifacts:config=config/crd/bases

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
lint: $(GOLANGCI_LINT) ## Run golangci-lint (config: .golangci.yml).
	$(GOLANGCI_LINT) run ./...

.PHONY: lint-fix
lint-fix: $(GOLANGCI_LINT) ## Run golangci-lint and fix what it can.
	$(GOLANGCI_LINT) run --fix ./...

##@ Test

.PHONY: envtest-assets
envtest-assets: ## Build etcd, kube-apiserver and kubectl from source into bin/assets (cached).
	@hack/build-assets.sh etcd kube-apiserver kubectl >/dev/null

.PHONY: local-assets
local-assets: ## Build every local-cluster binary (adds kube-controller-manager, kube-scheduler, kwok).
	@hack/build-assets.sh etcd kube-apiserver kubectl kube-controller-manager kube-scheduler kwok >/dev/null

.PHONY: test
test: manifests generate fmt vet envtest-assets ## Unit and envtest suites against a real kube-apiserver and etcd.
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" go test $$(go list ./... | grep -v /test/e2e) -coverprofile cover.out

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME each.
	@hack/fuzz.sh $(FUZZTIME)

.PHONY: test-e2e
test-e2e: local-assets build ## End-to-end suite: local control plane, kwok nodes, the real manager, kubectl, Prometheus.
	go test ./test/e2e/ -v -count=1 -timeout 40m -ginkgo.v

.PHONY: bench
bench: envtest-assets ## Benchmarks (API calls per reconcile, pause latency, restart overhead, probe cost).
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" go test ./... -run '^$$' -bench . -benchmem -benchtime 1x -count 1

##@ Build

.PHONY: build
build: ## Build the manager, kubectl-acko (and kubectl_complete-acko), the simulator and the stand-in init into bin/.
	go build -o $(BIN)/manager ./cmd
	go build -o $(BIN)/kubectl-acko ./cmd/kubectl-acko
	go build -o $(BIN)/kubectl_complete-acko ./cmd/kubectl_complete-acko
	go build -o $(BIN)/aerosim ./cmd/aerosim
	go build -o $(BIN)/fakeinit ./test/fakeinit

.PHONY: krew
krew: ## Cross-build kubectl acko archives (linux/darwin, amd64/arm64) into dist/ and write dist/acko.yaml for krew.
	go run ./hack/krew -version $(VERSION) -out $(ROOT)/dist

.PHONY: run
run: manifests generate ## Run the manager against the cluster of the current kubeconfig.
	go run ./cmd --webhook-self-signed-url-host=127.0.0.1

.PHONY: run-local
run-local: local-assets build ## Local control plane, kwok nodes, simulator and manager (UP_FLAGS=--detach to return).
	go run ./hack/localcluster up $(UP_FLAGS)

.PHONY: stop-local
stop-local: ## Stop the local cluster started by run-local (only the processes it started).
	go run ./hack/localcluster down

.PHONY: wipe-local
wipe-local: ## Stop the local cluster and delete its state.
	go run ./hack/localcluster wipe

.PHONY: docker-build
docker-build: ## Build the manager image (needs a Docker engine; there is none on the dev machines).
	docker build -t $${IMG:-acko:dev} .

##@ Tools

$(CONTROLLER_GEN):
	cd hack/tools && go build -o $(CONTROLLER_GEN) sigs.k8s.io/controller-tools/cmd/controller-gen

$(GOLANGCI_LINT):
	cd hack/tools && go build -o $(GOLANGCI_LINT) github.com/golangci/golangci-lint/v2/cmd/golangci-lint
