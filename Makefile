# The project's entry points. `make help` lists them.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

BIN        := $(abspath bin)
TOOLS_MOD  := hack/tools
TOOLS_DEPS := $(TOOLS_MOD)/go.mod $(TOOLS_MOD)/go.sum $(wildcard $(TOOLS_MOD)/cmd/*/main.go)
COREDNS_MOD := $(TOOLS_MOD)/coredns
CLUSTERAPI_MOD := $(TOOLS_MOD)/clusterapi
# The CRDs of the kinds the cluster-api manager watches with the controllers
# and feature gates the hypershift-operator runs it with.
CLUSTERAPI_CRDS := cluster.x-k8s.io_clusters cluster.x-k8s.io_machines cluster.x-k8s.io_machinesets \
  cluster.x-k8s.io_machinedeployments cluster.x-k8s.io_machinehealthchecks cluster.x-k8s.io_machinedrainrules \
  addons.cluster.x-k8s.io_clusterresourcesets addons.cluster.x-k8s.io_clusterresourcesetbindings

GOLANGCI_LINT_VERSION := v2.15.0
GOLANGCI_LINT         := go run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
COMMIT  ?= $(shell git rev-parse --verify -q HEAD 2>/dev/null || echo unknown)
LDFLAGS := -X github.com/hypershift-le/hypershift/support/version.Version=$(VERSION) \
           -X github.com/hypershift-le/hypershift/support/version.Commit=$(COMMIT)

# Test binaries: the real etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler and kubectl, and the nodes' kubelet and kube-proxy, built
# from the Go modules pinned in hack/tools.
KUBE_CMDS := etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy
TESTBIN   := $(addprefix $(BIN)/,$(KUBE_CMDS))

# The Kubernetes binaries report their version as the Kubernetes build sets it
# (hack/lib/version.sh in kubernetes): the k8s.io/kubernetes module's version,
# and as build date its release time, so that the build stays reproducible.
# Module sources carry no git commit, so gitCommit stays empty.
KUBE_VERSION     = $(shell cd $(TOOLS_MOD) && go list -m -f '{{.Version}}' k8s.io/kubernetes)
KUBE_BUILD_DATE  = $(shell cd $(TOOLS_MOD) && go list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' k8s.io/kubernetes)
kube_version_x   = -X $(1).gitVersion=$(2) -X $(1).gitMajor=$(word 1,$(3)) -X $(1).gitMinor=$(word 2,$(3)) \
                   -X $(1).gitCommit= -X $(1).gitTreeState=clean -X $(1).buildDate=$(4)
kube_ldflags     = $(foreach pkg,k8s.io/component-base/version k8s.io/client-go/pkg/version,\
                     $(call kube_version_x,$(pkg),$(1),$(subst ., ,$(patsubst v%,%,$(1))),$(2)))

CONTAINER_TOOL ?= docker

# A package's tests may wait for another's real nodes (one set at a time on a
# machine: the end-to-end stories hold them for about 15 minutes).
GO_TEST_FLAGS ?= -race -count=1 -timeout=60m

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} \
	  /^[a-zA-Z0-9_.\/-]+:.*?##/ { printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2 } \
	  /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

.PHONY: clean
clean: ## Remove bin/ and the test cache.
	rm -rf $(BIN)
	go clean -testcache

##@ Build

# Every binary is static (CGO_ENABLED=0), as the Dockerfile builds them: the
# images hold no C library (hack/images).
.PHONY: build
build: ## Build hypershift, hypershift-operator, control-plane-operator and hypershift-machine into bin/.
	CGO_ENABLED=0 go build -ldflags "$(LDFLAGS)" -o $(BIN)/ ./cmd/hypershift ./hypershift-operator ./control-plane-operator ./hypershift-machine

IMG ?= quay.io/hypershift-le/hypershift:$(VERSION)

.PHONY: image
image: build testbin clusterbin ## Build the images without a container engine into bin/images (an OCI layout): hypershift (the Dockerfile's image), etcd, hyperkube and pause.
	go run ./hack/images/cmd/build-images --bin $(BIN) --out $(BIN)/images --tag $(VERSION) --version $(VERSION) --revision $(COMMIT)

.PHONY: docker-build
docker-build: ## Build the image IMG with the version and commit of this tree (needs a container engine; CONTAINER_TOOL=podman for podman).
	$(CONTAINER_TOOL) build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t $(IMG) .

# KEEP=1 keeps the local cluster's state (objects, claims and their data)
# when it stops, and makes the next `make run KEEP=1` carry on from it.
KEEP ?=
KEEP_FLAG = $(if $(KEEP),--keep-state)

# NODES is how many real nodes the local cluster runs (at least 1).
NODES ?= 2

.PHONY: run
run: nodepkgs build testbin clusterbin ## Start the whole system locally: a real cluster on NODES real nodes, the operators as pods, a demo HostedCluster (Ctrl-C stops it; starts clean unless KEEP=1).
	KUBEBUILDER_ASSETS=$(BIN) go run -ldflags "$(LDFLAGS)" ./hack/devcluster --bin $(BIN) --state $(BIN)/dev --nodes $(NODES) $(KEEP_FLAG)

.PHONY: stop
stop: ## Stop what `make run` started; its state goes unless it runs with KEEP=1.
	go run ./hack/devcluster --stop --state $(BIN)/dev $(KEEP_FLAG)

.PHONY: clusterbin
clusterbin: ## Build what the local cluster's nodes run besides the product and Kubernetes: the pause program and the local-path provisioner.
	CGO_ENABLED=0 go build -o $(BIN)/ ./hack/images/pause ./test/localcluster/cmd/local-path-provisioner

.PHONY: localbin
localbin: ## Build what the end-to-end tests run besides the product: a test-only operator build.
	CGO_ENABLED=0 go build -tags e2eunsafe -o $(BIN)/e2e/hypershift-operator-unsafe ./hypershift-operator

.PHONY: testbin
testbin: $(TESTBIN) $(BIN)/coredns $(BIN)/cluster-api ## Build etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kubelet, kube-proxy, CoreDNS and the cluster-api manager from Go modules (skipped when built).

# CoreDNS, for the real nodes' cluster.local: a module of its own (see its go.mod).
$(BIN)/coredns: $(COREDNS_MOD)/go.mod $(COREDNS_MOD)/go.sum $(COREDNS_MOD)/main.go
	@echo "Building CoreDNS from Go modules (about 2 minutes the first time)..."
	cd $(COREDNS_MOD) && CGO_ENABLED=0 go build -o $(BIN)/coredns .

# The cluster-api manager the payload's cluster-api image runs: a module of
# its own (see its go.mod).
$(BIN)/cluster-api: $(CLUSTERAPI_MOD)/go.mod $(CLUSTERAPI_MOD)/go.sum
	@echo "Building the cluster-api manager from Go modules (about 3 minutes the first time)..."
	cd $(CLUSTERAPI_MOD) && CGO_ENABLED=0 go build -o $(BIN)/cluster-api sigs.k8s.io/cluster-api

# One go build per binary, so that a cold build (17 minutes measured on 2
# cores) says what it is doing; the Go build cache shares their packages.
$(TESTBIN) &: $(TOOLS_DEPS)
	@echo "Building $(KUBE_CMDS) from Go modules (about 17 minutes on 2 cores the first time; kube-apiserver and kubelet take longest)..."
	@cd $(TOOLS_MOD) && n=0 && for cmd in $(KUBE_CMDS); do \
	  n=$$((n+1)); start=$$SECONDS; \
	  echo "building $$cmd ($$n/$(words $(KUBE_CMDS)))..."; \
	  CGO_ENABLED=0 go build -ldflags '$(call kube_ldflags,$(KUBE_VERSION),$(KUBE_BUILD_DATE))' -o $(BIN)/ ./cmd/$$cmd || exit 1; \
	  echo "built $$cmd in $$((SECONDS - start))s"; \
	done
	@touch $(TESTBIN)

# What real nodes need from Debian's packages (test/nodes).
NODE_PACKAGES := containerd runc containernetworking-plugins iptables iproute2

.PHONY: nodepkgs
nodepkgs: ## Install what real nodes need from Debian's packages, when missing (needs root).
	@if ! command -v containerd >/dev/null || ! command -v runc >/dev/null || [[ ! -x /usr/lib/cni/bridge ]] || ! command -v iptables >/dev/null; then \
	  echo "Installing $(NODE_PACKAGES) from Debian's packages..."; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(NODE_PACKAGES) >/dev/null; \
	fi

$(BIN)/controller-gen: $(TOOLS_MOD)/go.mod $(TOOLS_MOD)/go.sum
	cd $(TOOLS_MOD) && go build -o $(BIN)/ sigs.k8s.io/controller-tools/cmd/controller-gen

##@ Development

.PHONY: generate
generate: $(BIN)/controller-gen ## Generate deepcopy code and CRDs (api/crds), and tidy the modules.
	$(BIN)/controller-gen object:headerFile=hack/boilerplate.go.txt paths=./api/...
	$(BIN)/controller-gen crd paths=./api/... output:crd:dir=./api/crds
	go run ./hack/crdbounds api/crds/hypershift.openshift.io_*.yaml
	@# cluster-api's CRDs, as its module pins them (hack/tools/clusterapi).
	@dir=$$(cd $(CLUSTERAPI_MOD) && go list -m -f '{{.Dir}}' sigs.k8s.io/cluster-api) && \
	  rm -rf api/crds/cluster-api && mkdir -p api/crds/cluster-api && \
	  for crd in $(CLUSTERAPI_CRDS); do install -m 644 $$dir/config/crd/bases/$$crd.yaml api/crds/cluster-api/; done
	go mod tidy
	cd $(TOOLS_MOD) && go mod tidy
	cd $(COREDNS_MOD) && go mod tidy
	cd $(CLUSTERAPI_MOD) && go mod tidy

.PHONY: fmt
fmt: ## Format the code with gofmt.
	gofmt -s -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## Run go vet, on the e2eunsafe build's files too.
	go vet ./...
	go vet -tags e2eunsafe ./hypershift-operator/...
	cd $(TOOLS_MOD) && go vet ./...
	cd $(COREDNS_MOD) && go vet ./...

.PHONY: lint
lint: ## Run golangci-lint with the committed configuration.
	$(GOLANGCI_LINT) run ./...
	$(GOLANGCI_LINT) run --build-tags e2eunsafe ./hypershift-operator/...

.PHONY: verify
verify: generate ## Regenerate, check formatting, vet and lint, and fail if the tree changed.
	@unformatted=$$(gofmt -s -l $$(git ls-files '*.go')); \
	  if [[ -n "$$unformatted" ]]; then echo "These files are not gofmt -s formatted:"; echo "$$unformatted"; exit 1; fi
	$(MAKE) vet lint
	@if [[ -n "$$(git status --porcelain)" ]]; then \
	  echo "The tree changed after make generate (commit the regenerated files):"; git status --porcelain; git diff; exit 1; fi

##@ Test

# Packages of `make test`: all but the end-to-end stories.
UNIT_PKGS = $(shell go list ./... | grep -v '/test/e2e')

.PHONY: test
test: nodepkgs build testbin clusterbin ## Run the unit and envtest integration tests against a real kube-apiserver and etcd (builds them when missing); no end-to-end stories.
	@echo "Compiling the tests first, so that timing-sensitive tests do not run beside the compiler..."
	@# -exec=true: build every test binary, run none (a package's TestMain would start its servers).
	@go test $(GO_TEST_FLAGS) -exec=true -run '^$$' $(UNIT_PKGS) >/dev/null || go test $(GO_TEST_FLAGS) -exec=true -run '^$$' $(UNIT_PKGS)
	KUBEBUILDER_ASSETS=$(BIN) go test $(GO_TEST_FLAGS) $(UNIT_PKGS)

.PHONY: test-e2e
test-e2e: nodepkgs build testbin clusterbin localbin ## Run only the end-to-end stories on the local cluster, on three real nodes (E2E_NODES=n for another count).
	KUBEBUILDER_ASSETS=$(BIN) go test -count=1 -timeout=50m -v ./test/e2e/...

.PHONY: test-all
test-all: nodepkgs build testbin clusterbin localbin ## Run every test, end-to-end stories included, in one go test run (what CI runs).
	@echo "Compiling the tests first, so that timing-sensitive tests do not run beside the compiler..."
	@# -exec=true: build every test binary, run none (a package's TestMain would start its servers).
	@go test $(GO_TEST_FLAGS) -exec=true -run '^$$' ./... >/dev/null || go test $(GO_TEST_FLAGS) -exec=true -run '^$$' ./...
	KUBEBUILDER_ASSETS=$(BIN) go test $(GO_TEST_FLAGS) ./...

##@ Benchmarks

.PHONY: bench-election
bench-election: testbin ## Measure Lease traffic, handover and takeover of our elector against client-go with three anchor timings; writes docs/benchmarks.md.
	KUBEBUILDER_ASSETS=$(BIN) go run ./test/bench/election

.PHONY: bench-scale
bench-scale: build testbin ## Run 1,000 HostedClusters with the hypershift-operator, 1,000 electors, and the fencing policy's cost per write at 1,000 and 10,000 namespaces, on one API server; writes docs/benchmarks.md.
	KUBEBUILDER_ASSETS=$(BIN) go run ./test/bench/scale

.PHONY: bench-scale-10000
bench-scale-10000: build testbin ## Run 10,000 HostedClusters with one hypershift-operator on one API server (takes about half an hour): converged, writes once converged, the operator's and the API server's memory; writes docs/benchmarks.md.
	KUBEBUILDER_ASSETS=$(BIN) go run ./test/bench/scale -run=hostedclusters10000

.PHONY: bench-scale-replicas
bench-scale-replicas: build testbin ## Converge 1,000 HostedClusters with 1 hypershift-operator replica, then with 2 and 4 splitting 4 shards, each on a fresh API server (about 15 minutes); ratios against the one replica; writes docs/benchmarks.md.
	KUBEBUILDER_ASSETS=$(BIN) go run ./test/bench/scale -run=hostedclustersreplicas

CHAOS ?= 20m
CHAOS_ROUNDS ?= 12

.PHONY: chaos
chaos: nodepkgs build testbin clusterbin localbin ## Make the node faults (kubelet restart, drain, node lost, node cut off, crash loop, the HO leader's node lost) in turn on the local cluster's three real nodes for CHAOS (20m) or CHAOS_ROUNDS (12) rounds; writes docs/benchmarks.md.
	E2E_CHAOS=$(CHAOS) E2E_CHAOS_ROUNDS=$(CHAOS_ROUNDS) KUBEBUILDER_ASSETS=$(BIN) go test -count=1 -timeout=120m -v -run '^TestChaos$$' ./test/e2e/

.PHONY: bench-outage
bench-outage: testbin ## Cut 100 leaders and their standbys off from the API server for 30s, 60s and 120s, ours against exit-on-deadline; writes docs/benchmarks.md.
	KUBEBUILDER_ASSETS=$(BIN) go run ./test/bench/outage

.PHONY: bench-nodepools
bench-nodepools: nodepkgs build testbin clusterbin ## Create NodePools of 1, 3 and 5 real nodes (platform None, and platform Pod: machines the management cluster runs) on the local cluster, scale one up, replace a pool of 3 onto the next release: time to Ready nodes against the management cluster's own nodes, memory per worker; writes docs/benchmarks.md.
	KUBEBUILDER_ASSETS=$(BIN) go run ./test/bench/nodepools

.PHONY: bench-density
bench-density: nodepkgs build testbin clusterbin ## Create single-replica HostedClusters one after another on the local cluster until the next does not serve within a minute or memory is 90% used; how many serve at once; writes docs/benchmarks.md.
	KUBEBUILDER_ASSETS=$(BIN) go run ./test/bench/controlplanes -density

.PHONY: bench-levers
bench-levers: testbin ## Measure hosted control-plane settings (GOGC; the kube-apiserver's priority and fairness, watch cache, API groups; etcd's snapshot count and quota; kube-controller-manager's controllers) one at a time against an anchor run: memory under a small load, CPU time to serve; writes docs/benchmarks.md.
	KUBEBUILDER_ASSETS=$(BIN) go run ./test/bench/levers

.PHONY: bench-controlplanes
bench-controlplanes: nodepkgs build testbin clusterbin ## Create HostedClusters with real control planes on the local cluster (5 one at a time, 10 at once): time to a working API, memory, writes once converged; writes docs/benchmarks.md.
	KUBEBUILDER_ASSETS=$(BIN) go run ./test/bench/controlplanes

