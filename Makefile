# sandgate: `make demo` runs the local platform, `make test` runs every test.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

KUBE_VERSION := v1.37.2
CACHE        ?= $(or $(SANDGATE_CACHE),$(HOME)/.cache/sandgate)
BIN_DIR      := $(CACHE)/bin/$(KUBE_VERSION)
export SANDGATE_CACHE := $(CACHE)

GO           ?= go
GOFLAGS_TEST ?=
# An iteration budget, not a duration: Go 1.26's fuzz coordinator can fail a
# target with a bare "context deadline exceeded" at the end of a -fuzztime
# duration on a loaded machine (go.dev/issue/75804, fixed in Go 1.27).
FUZZTIME     ?= 10000x
KUBE_LDFLAGS := -s -w \
  -X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) \
  -X k8s.io/component-base/version.gitMajor=1 \
  -X k8s.io/component-base/version.gitMinor=37 \
  -X k8s.io/component-base/version.gitTreeState=clean \
  -X k8s.io/client-go/pkg/version.gitVersion=$(KUBE_VERSION) \
  -X k8s.io/client-go/pkg/version.gitMajor=1 \
  -X k8s.io/client-go/pkg/version.gitMinor=37

# Stamps named by the tools modules' go.sum contents, so a fresh clone (new
# file times) reuses the cache and a version bump rebuilds.
sumof         = $(shell cat $(1) | sha256sum | cut -c1-16)
KUBE_STAMP   := $(BIN_DIR)/.kube-$(call sumof,tools/kube/go.sum)
ETCD_STAMP   := $(BIN_DIR)/.etcd-$(call sumof,tools/etcd/go.sum tools/etcd/main.go)
CONTROLPLANE := $(KUBE_STAMP) $(ETCD_STAMP)
ifneq ($(KUBEBUILDER_ASSETS),)
CONTROLPLANE :=
endif

.PHONY: help
help: ## list the targets
	@awk -F':.*## ' '/^[a-z-]+:.*## /{printf "  make %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## build the sandgate binaries into bin/
	$(GO) build -o bin/ ./cmd/...

.PHONY: demo
demo: controlplane ## run the local platform until Ctrl-C: kube-apiserver + etcd, simulated 2-node cluster, auth API, node proxies
	@echo ">> building the demo, the auth API and the node proxy"
	$(GO) build -o bin/ ./cmd/sandgate-demo ./cmd/authapi ./cmd/nodeproxy
	./bin/sandgate-demo $(DEMO_FLAGS)

.PHONY: controlplane
controlplane: $(CONTROLPLANE) ## build etcd, kube-apiserver and kubectl once into the cache
	@echo ">> control plane binaries: $(or $(KUBEBUILDER_ASSETS),$(BIN_DIR))"

$(KUBE_STAMP):
	@mkdir -p $(BIN_DIR)
	@echo ">> building kube-apiserver and kubectl $(KUBE_VERSION) from the Go module proxy into $(BIN_DIR)"
	@echo ">> a cold build takes about 7 minutes on 2 cores; later runs reuse the binaries"
	@start=$$(date +%s); cd tools/kube && $(GO) build -v -trimpath -ldflags "$(KUBE_LDFLAGS)" -o $(BIN_DIR)/ \
	  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl 2>&1 | \
	  awk -v s=$$start '{ n++ } n % 200 == 0 { printf ">> kube: %d packages compiled (%ds)\n", n, systime()-s; fflush() } /^#|\.go:[0-9]/ { print }'
	@touch $@

$(ETCD_STAMP):
	@mkdir -p $(BIN_DIR)
	@echo ">> building etcd from the Go module proxy into $(BIN_DIR)"
	cd tools/etcd && $(GO) build -trimpath -ldflags "-s -w" -o $(BIN_DIR)/etcd .
	@touch $@

CONTROLLER_GEN := $(CACHE)/bin/controller-gen-$(call sumof,tools/codegen/go.sum)
$(CONTROLLER_GEN):
	@mkdir -p $(dir $@)
	@echo ">> building controller-gen"
	cd tools/codegen && $(GO) build -o $@ sigs.k8s.io/controller-tools/cmd/controller-gen

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
	@echo ">> go vet"; $(GO) vet ./...

.PHONY: chromium
chromium: ## install Debian's chromium for the browser tests when it is missing (needs root)
	@if ! command -v chromium >/dev/null 2>&1; then \
	  echo ">> installing chromium from Debian for the browser tests"; \
	  if [ "$$(id -u)" != 0 ]; then echo "chromium is missing: run 'sudo apt-get install -y chromium' or make as root"; exit 1; fi; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; \
	fi

.PHONY: test
test: controlplane chromium lint check-generated ## run every test (unit, integration on a real API server, browser, fuzz smoke)
	@echo ">> go test (integration tests start real etcd + kube-apiserver)"
	$(GO) test $(GOFLAGS_TEST) -count=1 ./...
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZTIME)

.PHONY: fuzz
fuzz: ## run every fuzz target for FUZZTIME each
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo ">> fuzz $$pkg $$f ($(FUZZTIME))"; \
	    $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg > /tmp/sandgate-fuzz.log 2>&1 || { cat /tmp/sandgate-fuzz.log; exit 1; }; \
	  done; \
	done

.PHONY: bench
bench: controlplane ## measure data path, sessions, scale and lifecycle into bench/RESULTS.md (about 4 min; not in make test)
	@echo ">> building the bench: servers run pinned to CPU 0, load generators to CPU 1 (taskset)"
	$(GO) build -o bin/sandgate-bench ./bench
	./bin/sandgate-bench -out bench/RESULTS.md $(BENCH_FLAGS)

.PHONY: clean
clean: ## remove build outputs (the control-plane cache stays)
	rm -rf bin
