# sandgate: `make demo` runs the local platform, `make test` runs every test.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

# KUBE_VERSION, AGENT_SANDBOX_VERSION and AGENT_SANDBOX_OLDEST: the pins
# every doc and test follows
include versions.env
KUBE_MINOR   := $(word 2,$(subst ., ,$(KUBE_VERSION)))
CACHE        ?= $(or $(SANDGATE_CACHE),$(HOME)/.cache/sandgate)
BIN_DIR      := $(CACHE)/bin/$(KUBE_VERSION)
export SANDGATE_CACHE := $(CACHE)
# the promtool the rules tests run (make promtool builds it)
export PROMTOOL := $(BIN_DIR)/promtool
# AGENT_SANDBOX_CRDS: a directory of upstream agent-sandbox's CRD files,
# which every test API server (internal/testing/clustertest) and the real
# cluster get in place of manifests/crds, so upstream's own schema checks
# every object the tests write. Unset, upstream's files beside the
# repository when they are there; make test fails without them
# (upstream-crds). make demo and make cluster use manifests/crds unless it
# is given.
CRDS_GIVEN    := $(AGENT_SANDBOX_CRDS)
UPSTREAM_CRDS := ../shared/upstream/agent-sandbox-$(AGENT_SANDBOX_OLDEST)/crds
override AGENT_SANDBOX_CRDS := $(abspath $(or $(AGENT_SANDBOX_CRDS),$(wildcard $(UPSTREAM_CRDS))))
export AGENT_SANDBOX_CRDS

GO           ?= go
# -race on every package: they all run goroutines (servers, informers,
# watchers), and it costs the browser tests, the longest, nothing
# measurable (they wait on Chromium and the API server). -trimpath keys the
# compiled packages by module path, not by where the checkout is, so a
# fresh clone (as CI makes) reuses what an earlier one compiled.
GOFLAGS_TEST ?= -race -trimpath
# Test binaries at once for the integration tests, which mostly wait on the
# API server, Chromium and their own timers: 3 on 2 cores keeps both busy.
INTEGRATION_P ?= 3
# An iteration budget, not a duration: Go 1.26's fuzz coordinator can fail a
# target with a bare "context deadline exceeded" at the end of a -fuzztime
# duration on a loaded machine (go.dev/issue/75804, fixed in Go 1.27).
FUZZTIME     ?= 10000x
# More test binary flags for each fuzz target, such as -test.parallel=1.
FUZZFLAGS    ?=
# How many make test runs in a row test-under-load wants.
RUNS         ?= 5
KUBE_LDFLAGS := -s -w \
  -X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) \
  -X k8s.io/component-base/version.gitMajor=1 \
  -X k8s.io/component-base/version.gitMinor=$(KUBE_MINOR) \
  -X k8s.io/component-base/version.gitTreeState=clean \
  -X k8s.io/client-go/pkg/version.gitVersion=$(KUBE_VERSION) \
  -X k8s.io/client-go/pkg/version.gitMajor=1 \
  -X k8s.io/client-go/pkg/version.gitMinor=$(KUBE_MINOR)

# Every binary builds static with -trimpath, the same flags for all: the
# tools modules (with the dependency versions they share kept equal,
# tools/versions_test.go), sandgate's commands, the images, the bench and the
# binaries tests build (internal/gobuild). So the build cache compiles
# client-go, grpc, otel and the rest once for all, and -trimpath keys
# sandgate's own packages by module path, so a fresh clone reuses them.
GO_BUILD := CGO_ENABLED=0 $(GO) build -trimpath

# Stamps named by the tools modules' go.sum contents, so a fresh clone (new
# file times) reuses the cache and a version bump rebuilds.
sumof         = $(shell cat $(1) | sha256sum | cut -c1-16)
KUBE_STAMP   := $(BIN_DIR)/.kube-$(call sumof,tools/kube/go.sum)
ETCD_STAMP   := $(BIN_DIR)/.etcd-$(call sumof,tools/etcd/go.sum tools/etcd/main.go)
NODES_STAMP  := $(BIN_DIR)/.nodes-$(call sumof,tools/kube/go.sum)
CONTROLPLANE := $(KUBE_STAMP) $(ETCD_STAMP)
ifneq ($(KUBEBUILDER_ASSETS),)
CONTROLPLANE :=
endif

.PHONY: help
help: ## list the targets
	@awk -F':.*## ' '/^[a-z0-9-]+:.*## /{printf "  make %-17s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## build the sandgate binaries into bin/
	$(GO_BUILD) -ldflags "$(VERSION_LDFLAGS)" -o bin/ ./cmd/...

# Container images without Docker: static binaries, then one reproducible
# docker-archive tarball per image for `ctr -n k8s.io images import`, tagged
# sandgate.local/<name>:$(VERSION). CoreDNS and the NetworkPolicy enforcers
# join when their binaries are built (checked when the recipe runs, so a
# make that builds them first includes them).
STATIC_CMDS := authapi nodeproxy agent-standin pause sandbox-controller-standin
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
VERSION_LDFLAGS := -X github.com/sandgate/sandgate/internal/buildinfo.version=$(VERSION)
COREDNS_BIN ?= $(BIN_DIR)/coredns
NETPOL_BIN  ?= $(BIN_DIR)/kube-network-policies
KUBEROUTER_BIN ?= $(BIN_DIR)/kube-router

.PHONY: static
static: ## static CGO_ENABLED=0 binaries for the images into bin/static
	@mkdir -p bin/static
	$(GO_BUILD) -ldflags "-s -w $(VERSION_LDFLAGS)" -o bin/static/ $(addprefix ./cmd/,$(STATIC_CMDS))

.PHONY: busybox-static
busybox-static: ## install Debian's busybox-static for the busybox image when it is missing (needs root)
	@if ! dpkg -s busybox-static >/dev/null 2>&1; then \
	  echo ">> installing busybox-static from Debian for the busybox image"; \
	  if [ "$$(id -u)" != 0 ]; then echo "busybox-static is missing: run 'sudo apt-get install -y busybox-static' or make as root"; exit 1; fi; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q busybox-static || \
	  { DEBIAN_FRONTEND=noninteractive apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q busybox-static; }; \
	fi

.PHONY: images
images: static busybox-static ## OCI image tarballs into bin/images (no Docker)
	$(GO_BUILD) -o bin/ ./cmd/sandgate-images
	./bin/sandgate-images --bin-dir bin/static --out-dir bin/images --version $(VERSION) \
	  --revision "$$(git rev-parse HEAD 2>/dev/null || true)" \
	  $$(for b in coredns=$(COREDNS_BIN) kube-network-policies=$(NETPOL_BIN) kube-router=$(KUBEROUTER_BIN); do \
	    test ! -x "$${b#*=}" || echo "--bin $$b"; done)

.PHONY: demo
demo: controlplane ## run the local platform until Ctrl-C: kube-apiserver + etcd, simulated 2-node cluster, auth API, node proxies
	@echo ">> building the demo, the auth API and the node proxy"
	$(GO_BUILD) -o bin/ ./cmd/sandgate-demo ./cmd/authapi ./cmd/nodeproxy
	./bin/sandgate-demo $(if $(CRDS_GIVEN),--crds $(AGENT_SANDBOX_CRDS)) $(DEMO_FLAGS)

.PHONY: controlplane
controlplane: $(CONTROLPLANE) ## build etcd, kube-apiserver and kubectl once into the cache
	@echo ">> control plane binaries: $(or $(KUBEBUILDER_ASSETS),$(BIN_DIR))"

$(KUBE_STAMP):
	@mkdir -p $(BIN_DIR)
	@echo ">> building kube-apiserver and kubectl $(KUBE_VERSION) from the Go module proxy into $(BIN_DIR)"
	@echo ">> a cold build takes about 7 minutes on 2 cores; later runs reuse the binaries"
	@start=$$(date +%s); cd tools/kube && $(GO_BUILD) -v -ldflags "$(KUBE_LDFLAGS)" -o $(BIN_DIR)/ \
	  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl 2>&1 | \
	  awk -v s=$$start '{ n++ } n % 200 == 0 { printf ">> kube: %d packages compiled (%ds)\n", n, systime()-s; fflush() } /^#|\.go:[0-9]/ { print }'
	@touch $@

$(NODES_STAMP): $(KUBE_STAMP)
	@echo ">> building kubelet, kube-proxy, kube-controller-manager and kube-scheduler $(KUBE_VERSION) into $(BIN_DIR)"
	@start=$$(date +%s); cd tools/kube && $(GO_BUILD) -v -ldflags "$(KUBE_LDFLAGS)" -o $(BIN_DIR)/ \
	  k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy \
	  k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler 2>&1 | \
	  awk -v s=$$start '{ n++ } n % 200 == 0 { printf ">> kube nodes: %d packages compiled (%ds)\n", n, systime()-s; fflush() } /^#|\.go:[0-9]/ { print }'
	@touch $@

$(ETCD_STAMP):
	@mkdir -p $(BIN_DIR)
	@echo ">> building etcd from the Go module proxy into $(BIN_DIR)"
	cd tools/etcd && $(GO_BUILD) -ldflags "-s -w" -o $(BIN_DIR)/etcd .
	@touch $@

# Node and cluster add-on binaries for the real two-node cluster, each from its
# own tools module and built static (CGO_ENABLED=0). modver reads a module's
# version from a tools module's go.mod, so a bump there rebuilds and relabels.
modver            = $(shell awk '$$1 == "require" { $$0 = substr($$0, 9) } $$1 == "$(2)" { print $$2; exit }' $(1))
CONTAINERD_VERSION := $(call modver,tools/containerd/go.mod,github.com/containerd/containerd/v2)
COREDNS_VERSION    := $(call modver,tools/coredns/go.mod,github.com/coredns/coredns)
LOCALPATH_VERSION  := $(call modver,tools/localpath/go.mod,github.com/rancher/local-path-provisioner)
CONTAINERD_STAMP   := $(BIN_DIR)/.containerd-$(call sumof,tools/containerd/go.sum)
COREDNS_STAMP      := $(BIN_DIR)/.coredns-$(call sumof,tools/coredns/go.sum tools/coredns/main.go)
LOCALPATH_STAMP    := $(BIN_DIR)/.localpath-$(call sumof,tools/localpath/go.sum)
NETPOL_VERSION     := $(call modver,tools/netpol/go.mod,sigs.k8s.io/kube-network-policies)
NETPOL_STAMP       := $(BIN_DIR)/.netpol-$(call sumof,tools/netpol/go.sum)
PROMTOOL_VERSION   := $(call modver,tools/promtool/go.mod,github.com/prometheus/prometheus)
# Without the service discovery plugins (AWS, Azure, GCE and the rest: the
# tests only check and unit-test rules), upstream's own build tag.
PROMTOOL_TAGS      := remove_all_sd
PROMTOOL_STAMP     := $(BIN_DIR)/.promtool-$(call sumof,tools/promtool/go.sum)-$(PROMTOOL_TAGS)
KUBEROUTER_VERSION := $(call modver,tools/kuberouter/go.mod,github.com/cloudnativelabs/kube-router/v2)
KUBEROUTER_STAMP   := $(BIN_DIR)/.kuberouter-$(call sumof,tools/kuberouter/go.sum)
# btrfs, devmapper and zfs snapshotters need cgo or host tools; overlayfs and
# native remain. The shim also drops gRPC (containerd's own Makefile does too).
CONTAINERD_TAGS    := no_btrfs no_devmapper no_zfs
CONTAINERD_LDFLAGS := -s -w -X github.com/containerd/containerd/v2/version.Version=$(CONTAINERD_VERSION)

.PHONY: cluster-tools
cluster-tools: $(CONTAINERD_STAMP) $(COREDNS_STAMP) $(LOCALPATH_STAMP) policy-enforcer ## build containerd, CoreDNS, local-path-provisioner and this kernel's NetworkPolicy enforcer into the cache
	@echo ">> cluster tools: $(BIN_DIR)"

# The cluster runs kube-network-policies where nftables can queue packets to
# userspace, else kube-router; sandgate-cluster probes the kernel as it will
# when the nodes come up, and only that enforcer is built.
.PHONY: policy-enforcer
policy-enforcer: ## build the NetworkPolicy enforcer this kernel runs (sandgate-cluster enforcer; root)
	@$(GO_BUILD) -o bin/ ./cmd/sandgate-cluster
	@e=$$(./bin/sandgate-cluster enforcer); echo ">> NetworkPolicy enforcer for this kernel: $$e (the other is not built)"; \
	  case $$e in kube-router) $(MAKE) --no-print-directory $(KUBEROUTER_STAMP);; *) $(MAKE) --no-print-directory $(NETPOL_STAMP);; esac

$(CONTAINERD_STAMP):
	@mkdir -p $(BIN_DIR)
	@echo ">> building containerd, ctr and containerd-shim-runc-v2 $(CONTAINERD_VERSION) into $(BIN_DIR)"
	cd tools/containerd && $(GO_BUILD) -tags "$(CONTAINERD_TAGS)" -ldflags "$(CONTAINERD_LDFLAGS)" \
	  -o $(BIN_DIR)/ github.com/containerd/containerd/v2/cmd/containerd github.com/containerd/containerd/v2/cmd/ctr
	cd tools/containerd && $(GO_BUILD) -tags "$(CONTAINERD_TAGS) no_grpc" -ldflags "$(CONTAINERD_LDFLAGS)" \
	  -o $(BIN_DIR)/containerd-shim-runc-v2 github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2
	@touch $@

$(COREDNS_STAMP):
	@mkdir -p $(BIN_DIR)
	@echo ">> building CoreDNS $(COREDNS_VERSION) (cluster DNS plugins only, no forward) into $(BIN_DIR)"
	cd tools/coredns && $(GO_BUILD) \
	  -ldflags "-s -w -X github.com/coredns/coredns/coremain.GitCommit=$(COREDNS_VERSION)" -o $(BIN_DIR)/coredns .
	@touch $@

$(NETPOL_STAMP):
	@mkdir -p $(BIN_DIR)
	@echo ">> building kube-network-policies $(NETPOL_VERSION) (the NetworkPolicy enforcer) into $(BIN_DIR)"
	cd tools/netpol && $(GO_BUILD) -ldflags "-s -w" -o $(BIN_DIR)/kube-network-policies sigs.k8s.io/kube-network-policies/cmd
	@touch $@

.PHONY: promtool
promtool: $(PROMTOOL_STAMP) ## build Prometheus' promtool (checks and unit-tests the alerting rules) into the cache

$(PROMTOOL_STAMP):
	@mkdir -p $(BIN_DIR)
	@echo ">> building promtool (Prometheus $(PROMTOOL_VERSION), tags $(PROMTOOL_TAGS)) into $(BIN_DIR)"
	cd tools/promtool && $(GO_BUILD) -tags "$(PROMTOOL_TAGS)" -ldflags "-s -w" -o $(BIN_DIR)/promtool github.com/prometheus/prometheus/cmd/promtool
	@touch $@

# Helm v4 for the chart tests (charts/sandgate: helm lint, helm template
# compared with kustomize, server-side dry-run), built from its module.
HELM_VERSION := $(call modver,tools/helm/go.mod,helm.sh/helm/v4)
HELM_STAMP   := $(BIN_DIR)/.helm-$(call sumof,tools/helm/go.sum)
export HELM  := $(BIN_DIR)/helm

.PHONY: helm
helm: $(HELM_STAMP) ## build Helm (lints and renders charts/sandgate) into the cache

$(HELM_STAMP):
	@mkdir -p $(BIN_DIR)
	@echo ">> building helm $(HELM_VERSION) into $(BIN_DIR)"
	cd tools/helm && $(GO_BUILD) -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$(HELM_VERSION)" \
	  -o $(BIN_DIR)/helm helm.sh/helm/v4/cmd/helm
	@touch $@

.PHONY: chart
chart: controlplane ## regenerate charts/sandgate/files from manifests/ (after changing manifests/)
	$(GO) test -count=1 -run '^TestChartFilesMatchManifests$$' ./charts/sandgate -update

# oauth2-proxy and the OIDC provider stand-in (mockoidc) for the SSO
# variant's end-to-end test (internal/testing/ssojourney).
OAUTH2PROXY_VERSION := $(call modver,tools/oauth2proxy/go.mod,github.com/oauth2-proxy/oauth2-proxy/v7)
OAUTH2PROXY_STAMP   := $(BIN_DIR)/.oauth2proxy-$(call sumof,tools/oauth2proxy/go.sum tools/oauth2proxy/mockoidc-standin/main.go)

.PHONY: oauth2-proxy
oauth2-proxy: $(OAUTH2PROXY_STAMP) ## build oauth2-proxy and the OIDC provider stand-in (SSO journey) into the cache

$(OAUTH2PROXY_STAMP):
	@mkdir -p $(BIN_DIR)
	@echo ">> building oauth2-proxy $(OAUTH2PROXY_VERSION) and mockoidc-standin into $(BIN_DIR)"
	cd tools/oauth2proxy && $(GO_BUILD) \
	  -ldflags "-s -w -X github.com/oauth2-proxy/oauth2-proxy/v7/pkg/version.VERSION=$(OAUTH2PROXY_VERSION)" \
	  -o $(BIN_DIR)/ github.com/oauth2-proxy/oauth2-proxy/v7 ./mockoidc-standin
	@touch $@

$(KUBEROUTER_STAMP):
	@mkdir -p $(BIN_DIR)
	@echo ">> building kube-router $(KUBEROUTER_VERSION) (the NetworkPolicy enforcer where nftables cannot queue) into $(BIN_DIR)"
	cd tools/kuberouter && $(GO_BUILD) \
	  -ldflags "-s -w -X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=$(KUBEROUTER_VERSION)" \
	  -o $(BIN_DIR)/kube-router github.com/cloudnativelabs/kube-router/v2/cmd/kube-router
	@touch $@

$(LOCALPATH_STAMP):
	@mkdir -p $(BIN_DIR)
	@echo ">> building local-path-provisioner $(LOCALPATH_VERSION) into $(BIN_DIR)"
	cd tools/localpath && $(GO_BUILD) -ldflags "-s -w -X main.VERSION=$(LOCALPATH_VERSION)" \
	  -o $(BIN_DIR)/local-path-provisioner github.com/rancher/local-path-provisioner
	@touch $@

CONTROLLER_GEN := $(CACHE)/bin/controller-gen-$(call sumof,tools/codegen/go.sum)
$(CONTROLLER_GEN):
	@mkdir -p $(dir $@)
	@echo ">> building controller-gen"
	cd tools/codegen && $(GO_BUILD) -o $@ sigs.k8s.io/controller-tools/cmd/controller-gen

.PHONY: generate
generate: $(CONTROLLER_GEN) ## regenerate deepcopy functions and CRDs from internal/sandboxapi
	$(CONTROLLER_GEN) object paths=./internal/sandboxapi/... crd:crdVersions=v1 output:crd:artifacts:config=manifests/crds

.PHONY: check-generated
check-generated: generate ## fail when generated files differ from the checked-in ones
	@git diff --exit-code -- manifests/crds internal/sandboxapi || \
	  { echo "generated files are stale: run 'make generate' and commit"; exit 1; }
	@test -z "$$(git status --porcelain -- manifests/crds internal/sandboxapi)" || \
	  { echo "generated files are untracked: run 'make generate' and commit"; exit 1; }

.PHONY: lint
lint: ## gofmt and go vet
	@echo ">> gofmt"; out=$$(gofmt -l $$(git ls-files '*.go')); test -z "$$out" || { echo "gofmt needed: $$out"; exit 1; }
	@echo ">> go vet (with the tests' build flags, so the unit tests reuse what it compiles)"; $(GO) vet $(GOFLAGS_TEST) ./...

.PHONY: chromium
chromium: ## install Debian's chromium for the browser tests when it is missing (needs root)
	@if ! command -v chromium >/dev/null 2>&1; then \
	  echo ">> installing chromium from Debian for the browser tests"; \
	  if [ "$$(id -u)" != 0 ]; then echo "chromium is missing: run 'sudo apt-get install -y chromium' or make as root"; exit 1; fi; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; \
	fi

AXE_VERSION := 4.10.3
AXE_STAMP   := $(CACHE)/npm/node_modules/axe-core/axe.min.js

.PHONY: axe
axe: $(AXE_STAMP) ## install the pinned axe-core from the npm registry for the browser tests' accessibility checks

$(AXE_STAMP):
	@echo ">> npm install axe-core@$(AXE_VERSION) into $(CACHE)/npm"
	@mkdir -p $(CACHE)/npm
	npm install --prefix $(CACHE)/npm --no-save --no-audit --no-fund --ignore-scripts axe-core@$(AXE_VERSION)

# The tests apply upstream's CRDs, never silently the generated ones.
.PHONY: upstream-crds
upstream-crds:
	@test -n "$(AGENT_SANDBOX_CRDS)" || { echo "make test applies upstream agent-sandbox's CRDs to every test API server:" \
	  "set AGENT_SANDBOX_CRDS to a directory of them (the crds/ of a release, $(AGENT_SANDBOX_OLDEST) to $(AGENT_SANDBOX_VERSION));" \
	  "none at $(UPSTREAM_CRDS)" >&2; exit 1; }
	@ls $(AGENT_SANDBOX_CRDS)/*.yaml >/dev/null 2>&1 || { echo "AGENT_SANDBOX_CRDS=$(AGENT_SANDBOX_CRDS) holds no .yaml files" >&2; exit 1; }
	@echo ">> CRDs for every test API server and the real cluster: upstream's, from AGENT_SANDBOX_CRDS=$(AGENT_SANDBOX_CRDS)"

# Each step of make test prints its wall and CPU time when it ends, and the
# run ends with a table of them (.ci/step), so the next person sees where a
# cold hour goes. The order gives a first result within minutes: lint, then
# the unit tests (the packages whose tests need nothing built, .ci/packages),
# before any long build. Then every package from Debian (apt runs once at a
# time) and what the real cluster needs, on both cores: its journey is the
# longest step, so it starts as early as the builds allow and runs in the
# background while the foreground builds what only the integration tests
# need and runs them; the bench smoke runs in the background too, at the
# lowest priority, on the CPU the others leave.
# Every fuzz target's seeds and stored corpus run with the unit and
# integration tests; the fuzzing itself (make fuzz) is not part of make
# test: its instrumented build is a second compile of every dependency, 14
# CPU-minutes cold, for 10,000 inputs a target.
STEP_TIMES ?= $(CURDIR)/artifacts/steps.tsv
export STEP_TIMES
STEP := .ci/step
# a step that fails after the journey started stops it too
OR_STOP = || { rc=$$?; .ci/background stop; exit $$rc; }

.PHONY: test
test: ## run every test (unit, integration on a real API server, browser, bench smoke, the journey on a real cluster), then the table of each step's time
	@rm -f $(STEP_TIMES)
	@$(STEP) lint $(MAKE) --no-print-directory lint
	@$(STEP) upstream-crds $(MAKE) --no-print-directory upstream-crds
	@echo ">> unit tests: the packages whose tests need nothing built (.ci/packages unit)"
	@$(STEP) "unit tests" $(GO) test $(GOFLAGS_TEST) -count=1 -timeout 20m $$(.ci/packages unit)
	@$(STEP) check-generated $(MAKE) --no-print-directory check-generated
	@$(STEP) "apt chromium" $(MAKE) --no-print-directory chromium
	@$(STEP) "apt cluster packages" $(MAKE) --no-print-directory cluster-packages busybox-static
	@$(STEP) "build control plane" $(MAKE) --no-print-directory controlplane
	@$(STEP) "build node binaries" $(MAKE) --no-print-directory $(NODES_STAMP)
	@$(STEP) "build cluster tools" $(MAKE) --no-print-directory cluster-tools
	@$(STEP) "build images" $(MAKE) --no-print-directory images
	@$(STEP) "build helm" $(MAKE) --no-print-directory helm
	@NICE=0 .ci/background start journey $(MAKE) --no-print-directory e2e-cluster
	@NICE=19 .ci/background start bench-smoke $(MAKE) --no-print-directory bench-smoke
	@$(STEP) "build promtool" $(MAKE) --no-print-directory promtool $(OR_STOP)
	@$(STEP) "build oauth2-proxy" $(MAKE) --no-print-directory oauth2-proxy $(OR_STOP)
	@$(STEP) "npm axe-core" $(MAKE) --no-print-directory axe $(OR_STOP)
	@echo ">> integration tests: real etcd + kube-apiserver with the CRDs in $(AGENT_SANDBOX_CRDS), browsers, the tools above (.ci/packages integration)"
	@$(STEP) "integration tests" $(GO) test $(GOFLAGS_TEST) -p $(INTEGRATION_P) -count=1 -timeout 20m $$(.ci/packages integration) $(OR_STOP)
	@echo ">> waiting for the journey on a real two-node cluster deployed from manifests/ and the bench smoke"
	@.ci/background wait journey $(OR_STOP)
	@.ci/background wait bench-smoke
	@$(STEP) --table

.PHONY: test-under-load
test-under-load: ## make test RUNS times in a row (default 5) with a busy loop on every core; stops at the first failure (about 2.5 hours on 2 cores)
	RUNS=$(RUNS) bash .ci/under-load

.PHONY: fuzz
# The targets are read from the test files go list names (the ones this
# build compiles), not with go test -list, which would link a test binary
# for every package just to list them. Each package's instrumented test
# binary is linked once and runs each of its targets in the package's
# folder (where testdata/fuzz is), with the corpus go test would use.
fuzz: ## fuzz every fuzz target for FUZZTIME each (not in make test, which runs their seeds and corpus)
	@mkdir -p bin/fuzz
	@cache=$$($(GO) env GOCACHE)/fuzz; \
	$(GO) list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}} {{.Dir}} {{join .TestGoFiles " "}} {{join .XTestGoFiles " "}}{{end}}' ./... | \
	while read -r pkg dir files; do \
	  targets=$$(cd "$$dir" && sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$files); \
	  [ -n "$$targets" ] || continue; \
	  bin=$(CURDIR)/bin/fuzz/$$(echo "$$pkg" | tr / _).test; \
	  $(GO) test -c -fuzz . -o "$$bin" "$$pkg" || exit 1; \
	  for f in $$targets; do \
	    echo ">> fuzz $$pkg $$f ($(FUZZTIME))"; \
	    (cd "$$dir" && "$$bin" -test.run '^$$' -test.fuzz "^$$f$$" -test.fuzztime $(FUZZTIME) \
	      -test.fuzzcachedir "$$cache/$$pkg" $(FUZZFLAGS)) > /tmp/sandgate-fuzz.log 2>&1 || { cat /tmp/sandgate-fuzz.log; exit 1; }; \
	  done; \
	done

.PHONY: bench
bench: controlplane $(TRAEFIK_STAMP) ## measure the pipeline benchmark, data path (with Traefik as way (e)), sessions, scale, growth and lifecycle into bench/RESULTS.md (about 12 min, and Traefik's build once; not in make test)
	@echo ">> the node proxy's pipeline benchmark, in process (5 runs)"
	@mkdir -p bench/out
	$(GO) test -v -run '^$$' -bench Pipeline -benchmem -benchtime 20000x -count 5 ./internal/requestpath/nodeproxy > bench/out/pipeline.txt || { cat bench/out/pipeline.txt; exit 1; }
	@grep 'pipeline:' bench/out/pipeline.txt | head -1
	@echo ">> building the bench: servers run pinned to CPU 0, load generators to CPU 1 (taskset)"
	$(GO_BUILD) -o bin/sandgate-bench ./bench
	./bin/sandgate-bench -out bench/RESULTS.md -pipeline bench/out/pipeline.txt -traefik $(BIN_DIR)/traefik $(BENCH_FLAGS)

# Traefik, the production proxy make bench measures as way (e); make test
# never builds it (15 CPU-minutes, 3 GB of memory).
TRAEFIK_VERSION := $(call modver,tools/traefik/go.mod,github.com/traefik/traefik/v3)
TRAEFIK_STAMP   := $(BIN_DIR)/.traefik-$(call sumof,tools/traefik/go.sum)

$(TRAEFIK_STAMP):
	@mkdir -p $(BIN_DIR)
	@echo ">> building Traefik $(TRAEFIK_VERSION) into $(BIN_DIR) for the bench's way (e) (once; about 15 CPU-minutes and 3 GB of memory)"
	cd tools/traefik && $(GO_BUILD) \
	  -ldflags "-s -w -X github.com/traefik/traefik/v3/pkg/version.Version=$(TRAEFIK_VERSION)" \
	  -o $(BIN_DIR)/traefik github.com/traefik/traefik/v3/cmd/traefik
	@touch $@

.PHONY: bench-fleet
FLEET_FLAGS ?=
bench-fleet: controlplane ## measure N node proxies' caches against one real API server (10, 50, 200, 500 nodes; 10k accounts; churn) into bench/FLEET.md
	@echo ">> building the bench: the fleet of node proxies against one API server"
	$(GO_BUILD) -o bin/sandgate-bench ./bench
	./bin/sandgate-bench -fleet bench/FLEET.md $(FLEET_FLAGS)

.PHONY: bench-smoke
bench-smoke: ## every bench way for about a second, results checked for shape, not speed (under a minute)
	@echo ">> bench smoke: every way of the bench once, checked for shape"
	$(GO_BUILD) -o bin/sandgate-bench ./bench
	./bin/sandgate-bench -smoke
	CGO_ENABLED=0 $(GO) run -trimpath ./bench/egress -smoke

.PHONY: clean
clean: ## remove build outputs (the control-plane cache stays)
	rm -rf bin

# The real two-node cluster: every binary above, the images, and the
# sandgate-cluster command that brings the nodes up (needs root).
CLUSTER_DEPS := $(CONTROLPLANE) $(NODES_STAMP) cluster-tools cluster-packages images
CLUSTER_FLAGS ?=

.PHONY: cluster-packages
cluster-packages: ## install runc, the CNI plugins, iptables, ipset, nftables, iproute2 and ping from Debian when missing (needs root)
	@missing=""; \
	  for p in runc:/usr/sbin/runc containernetworking-plugins:/usr/lib/cni/bridge iptables:/usr/sbin/iptables ipset:/usr/sbin/ipset nftables:/usr/sbin/nft conntrack:/usr/sbin/conntrack iproute2:/usr/sbin/ip iputils-ping:/usr/bin/ping; do \
	    test -x "$${p#*:}" || missing="$$missing $${p%%:*}"; \
	  done; \
	  if [ -n "$$missing" ]; then \
	    echo ">> installing$$missing from Debian for the real cluster"; \
	    if [ "$$(id -u)" != 0 ]; then echo "missing:$$missing: run make as root"; exit 1; fi; \
	    DEBIAN_FRONTEND=noninteractive apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; \
	  fi

.PHONY: cluster
cluster: $(CLUSTER_DEPS) ## run a real 2-node cluster (kubelet, containerd, CNI, kube-proxy, CoreDNS) with sandgate installed from manifests/, until Ctrl-C (root)
	$(GO_BUILD) -o bin/ ./cmd/sandgate-cluster
	./bin/sandgate-cluster up --version $(VERSION) $(if $(CRDS_GIVEN),,--crds manifests/crds) $(CLUSTER_FLAGS)

.PHONY: cluster-down
cluster-down: ## remove everything a killed `make cluster` left (processes, namespaces, mounts, links, rules)
	$(GO_BUILD) -o bin/ ./cmd/sandgate-cluster
	./bin/sandgate-cluster down

.PHONY: e2e-cluster
e2e-cluster: upstream-crds $(CLUSTER_DEPS) $(HELM_STAMP) ## the user journey on a real 2-node cluster deployed from manifests/, then the Helm chart on the same nodes (root, about 15 min)
	$(GO_BUILD) -o bin/ ./cmd/sandgate-cluster
	SANDGATE_CLUSTER_JOURNEY=1 VERSION=$(VERSION) AGENT_SANDBOX_CRDS=$(AGENT_SANDBOX_CRDS) CGO_ENABLED=0 $(GO) test -trimpath -count=1 -v -timeout 40m ./internal/testing/clusterjourney
