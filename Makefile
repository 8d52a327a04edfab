# butler-apiserver: `make run` brings up a local management plane with butler-apiserver aggregated
# into a real kube-apiserver; `make test` checks everything.
GO_BIN   ?= go
# Everything built from this module is built the way its image is (static, -trimpath): vet, the
# tests, the binaries and the image then share one compile of each package instead of two.
GO       := CGO_ENABLED=0 GOFLAGS=-trimpath $(GO_BIN)
BIN      := _output/bin
DATA_DIR ?= .butler
PORT     ?= 8443

LOCAL_DIR ?= _output/local

.PHONY: help docs verify-docs lint weed test-s3 test-realnode test-realnode-faults kube-versions cluster build-cluster test-cluster build-steward test-steward images verify-images verify-chart render-deploy fuzz test-faults test-starts bench-start-cost bench-bin bench-report bench-lifecycle bench-local bench-hibernation bench-density bench-snapshot bench-restore bench-ipam all build build-butler kubectl-butler build-kube build-capi build-localplane run run-standalone test verify verify-gofmt vet verify-codegen update-codegen test-unit test-integration test-e2e bench clean

.DEFAULT_GOAL := help

# help lists every target with a `## ` description on its line (make with no target runs it).
help: ## this list
	@echo 'make <target>; the targets:'
	@awk 'BEGIN {FS = ":[^#]*## "} /^[a-zA-Z0-9_-]+:[^=]*## / {printf "  %-21s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

all: build ## same as build

# build: butler-apiserver, and the kube-apiserver, kube-controller-manager, etcd and Cluster API
# manager of the local plane
build: build-butler build-localplane build-kube build-capi ## butler-apiserver, the local plane's command and its kube binaries, etcd and Cluster API manager

build-butler: ## butler-apiserver into _output/bin
	$(GO) build -o $(BIN)/butler-apiserver ./cmd/butler-apiserver

# build-localplane: the command `make run` runs (cmd/butler-localplane; test/localplane builds it too)
build-localplane: ## the local plane's command (butler-localplane) into _output/bin
	$(GO) build -o $(BIN)/butler-localplane ./cmd/butler-localplane

# kubectl-butler: the kubectl plugin into $(GOBIN) (or ~/go/bin): `kubectl butler` once it is on PATH
kubectl-butler: ## install the kubectl plugin (kubectl butler) into GOBIN
	$(GO) install ./cmd/kubectl-butler

build-kube: ## kube-apiserver, kube-controller-manager, kube-scheduler (pinned) and etcd (this module's) into _output/bin
	hack/build-kube.sh

build-capi: ## the Cluster API manager into _output/bin
	hack/build-capi.sh

# images: butler-apiserver's OCI image (linux/amd64 and linux/arm64 in one index, IMAGE_PLATFORMS to
# change), built from nothing, tagged from git describe, as an OCI layout and a tar in _output/images
images: ## butler-apiserver's reproducible OCI image into _output/images
	hack/build-images.sh

# cluster: a one-node Kubernetes cluster on this machine (root; Debian's containerd, runc and CNI
# plugins; kubelet and kube-proxy built like kube-apiserver), images from make images imported;
# Ctrl-C or SIGTERM stops it and cleans up (cmd/butler-cluster; its --help lists the environment
# it reads). exec: the command is then make's own child, the one make passes a SIGTERM to.
cluster: build-cluster ## a one-node Kubernetes cluster on this machine (root); Ctrl-C stops it
	hack/install-cluster-deps.sh
	exec $(BIN)/butler-cluster

# build-cluster: the command `make cluster` runs (hack/test-cluster.sh builds it too)
build-cluster: ## the one-node cluster's command (butler-cluster) into _output/bin
	$(GO) build -o $(BIN)/butler-cluster ./cmd/butler-cluster

# test-cluster: the chart installed into that cluster (hack/test-cluster.sh): APIService Available,
# the examples applied, a local TenantCluster Ready with its nodes listed, the workers' Lease
# holder's Pod deleted while another provisions, helm upgrade under a client loop (0 failed
# requests), helm uninstall leaves nothing. Installs the Debian packages it needs when missing.
# In .ci/run, not in make test.
test-cluster: build ## the chart installed and exercised in the one-node cluster (CI)
	hack/install-cluster-deps.sh
	hack/test-cluster.sh

# build-steward: the real engine from the source archives in THIRD_PARTY_DIR (once per machine:
# the script keeps them in the user's cache, and names the upstream repositories and commits
# when they are missing): Steward's
# manager, the Cluster API Steward provider and the tenant's kube-apiserver, kube-controller-manager
# and kube-scheduler (STEWARD_KUBE_VERSIONS), static, as images in _output/images/steward
build-steward: ## Steward, its Cluster API provider and tenant kube images from THIRD_PARTY_DIR
	hack/build-steward.sh

# test-steward: test-cluster with its Steward stage (hack/lib/steward.sh): Steward and its Cluster
# API provider installed from those images, a TenantCluster on them with local workers Ready,
# hibernated and woken, deleted without a trace
test-steward: build build-steward ## test-cluster plus a TenantCluster on the real Steward (CI)
	hack/install-cluster-deps.sh
	TEST_STEWARD=1 hack/test-cluster.sh

# verify-images: two image builds of this commit give the same digests (CI runs it)
verify-images: ## two image builds of this commit give the same digests (CI)
	hack/verify-images.sh

# run: etcd, kube-apiserver, kube-controller-manager and butler-apiserver behind an APIService;
# the management cluster's admin kubeconfig is $(LOCAL_DIR)/admin.kubeconfig
# (cmd/butler-localplane; its --help lists the environment it reads). exec: the command is then
# make's own child, the one make passes a SIGTERM to (and waits for), not a shell that dies of it
# and leaves the plane running.
run: build ## the local management plane; admin kubeconfig in _output/local/admin.kubeconfig
	exec env LOCAL_DIR=$(LOCAL_DIR) $(BIN)/butler-localplane

# run-standalone: butler-apiserver alone on embedded etcd in $(DATA_DIR), admin kubeconfig at $(DATA_DIR)/admin.kubeconfig
run-standalone: build-butler ## butler-apiserver alone on embedded etcd in DATA_DIR
	$(BIN)/butler-apiserver --standalone --data-dir $(DATA_DIR) --secure-port $(PORT)

# test: static checks, generated-code check, unit, integration and kubectl end-to-end tests
test: verify test-unit test-integration test-e2e ## verify, unit, integration and end-to-end tests (the CI's first stage)

verify: verify-gofmt vet verify-codegen verify-docs verify-chart ## gofmt, vet, generated code and docs, the chart are up to date

verify-gofmt: ## every Go file is gofmt-formatted
	hack/verify-gofmt.sh

vet: ## go vet of the module and hack/dist
	$(GO) vet ./...
	cd hack/dist && $(GO) vet ./...

verify-codegen: ## the generated code matches the API types
	hack/verify-codegen.sh

# docs: docs/reference/api.md (from the API types' comments, through the generated OpenAPI),
# flags.md (each binary's --help) and helm-values.md (the chart's values.yaml comments)
docs: ## regenerate the generated reference pages in docs/reference
	hack/update-docs.sh

verify-docs: ## the generated reference pages are up to date
	hack/verify-docs.sh

# lint: golangci-lint (.golangci.yml, pinned in hack/golangci-lint; its first build takes minutes,
# later runs reuse it) and shellcheck (installed from Debian when missing), hack/lint.sh; CI's first stage
lint: ## golangci-lint on the Go code and shellcheck on the scripts
	hack/lint.sh

update-codegen: ## regenerate the clients, deep copies, OpenAPI and protobuf after API type changes
	hack/update-codegen.sh

# verify-chart: helm lint and helm template of charts/butler-apiserver for each install mode, wrong
# values failing with the schema's message, and artifacts/deploy equal to the chart's rendering
verify-chart: ## helm lint and template of the chart, its schema, artifacts/deploy in sync
	hack/verify-chart.sh

# render-deploy: artifacts/deploy from the chart (after changing charts/butler-apiserver)
render-deploy: ## regenerate artifacts/deploy from the chart
	hack/render-deploy.sh

# The tests run with -vet=off: `make vet` has already vetted every package, test files included,
# with a superset of the checks go test runs.
test-unit: ## unit tests of pkg, cmd, the layering test, the bench driver, the Steward stage's checks, the tests' Git server and their longest-first gate
	$(GO) test -vet=off ./pkg/... ./cmd/... ./test/architecture/ ./test/bench/ ./test/steward/ ./test/gitserver/ ./test/longestfirst/
	$(GO_BIN) test -vet=off -race -run '^TestPlaceTenantsAtOnce$$' ./pkg/localprovider/controlplane/
	cd hack/dist && $(GO) test -vet=off ./...

test-integration: ## integration tests (butler-apiserver on an embedded etcd)
	$(GO) test -vet=off -count=1 -timeout 20m ./test/integration/...

# kube-versions: the Kubernetes version local tenants in the e2e tests run besides the pinned one
# (the upgrade tests' starting version, and the real Steward's tenants': Steward stops at 1.35),
# built once per run before any test's time limit starts; a tenant of any other version is built
# on first use, as `make run` does. Each version is a cold Kubernetes build on a new machine.
E2E_KUBE_VERSIONS ?= v1.35.4
kube-versions: ## build the extra Kubernetes versions the e2e tests' tenants run
	$(GO) build -o $(BIN)/butler-localprovider ./cmd/butler-localprovider
	$(BIN)/butler-localprovider build-kube --kube-versions-dir _output/kube-versions $(E2E_KUBE_VERSIONS)

# test-e2e: the standalone binary with kubectl (test/e2e/standalone, seconds) beside the whole
# management plane (butler-localplane; test/e2e/plane), in one go test.
# The plane's parallel tests run BUTLER_E2E_PARALLEL (4) at once, the longest first (test/e2e/framework/order.go):
# -parallel 64 opens Go's own gate, which would start them in no set order.
test-e2e: build kube-versions ## kubectl end-to-end tests on the standalone server and the local plane
	rm -f _output/e2e-durations.txt
	BUTLER_APISERVER=$(CURDIR)/$(BIN)/butler-apiserver $(GO) test -vet=off -count=1 -timeout 45m -parallel 64 -skip '^(TestSlow|TestS3)' \
	  ./test/e2e/standalone/ ./test/e2e/plane/; \
	  rc=$$?; cat _output/e2e-durations.txt 2>/dev/null; exit $$rc
	$(GO) test -vet=off -count=1 -timeout 20m -run '^TestPlaneStartFailsCleanly$$' ./test/starts/

# test-realnode: real worker nodes (LocalMachine spec.nodeType real) on this machine (root;
# Debian's containerd, runc and CNI plugins, installed when missing; the kubelet and kube-proxy
# built from source as make cluster's; the pause and echo images of hack/build-node-images.sh and
# Flux's of hack/build-flux-images.sh), and Flux syncing a tenant on them from a Git server
# (TestGitOpsTenant). REALNODE_RUN picks tests by go test's -run (REALNODE_RUN=TestGitOpsTenant).
# The three tests of real nodes run at once (realNodeParallel; they mostly wait on nodes):
# -parallel 3 lets them, where Go's default is GOMAXPROCS.
REALNODE_RUN ?= ^(TestRealNode|TestGitOpsTenant)
test-realnode: build kube-versions ## real worker nodes on this machine (root)
	$(realnode-deps)
	BUTLER_E2E_REALNODE=1 $(GO) test -vet=off -count=1 -timeout 15m -parallel 3 -run '$(REALNODE_RUN)' -v ./test/e2e/nodes/

define realnode-deps
	hack/install-cluster-deps.sh
	hack/build-kube.sh kubelet kube-proxy
	hack/build-node-images.sh >/dev/null
	hack/build-flux-images.sh
endef

# test-starts: STARTS_N plane starts and stops in a row, then STARTS_TENANTS tenant control
# planes at once, under STARTS_CONNECTIONS held loopback connections (docs/development/testing.md);
# every start must succeed and every stop leave no process. Slow (about 30 min for 50 starts);
# not part of `make test`. Appends its figures to _output/bench/starts.md. STARTS_BASELINE=<rev>
# first runs STARTS_BASELINE_N starts of that revision's plane (its cmd/butler-localplane, or its
# hack/local-up.sh before that) under the same load. Then `make run` stopped by SIGTERM as timeout and a supervisor send it (two starts, about 80 s).
STARTS_N           ?= 50
STARTS_TENANTS     ?= 20
STARTS_CONNECTIONS ?= 1500
STARTS_BASELINE    ?=
STARTS_BASELINE_N  ?= 10
test-starts: build ## STARTS_N plane starts and stops under load (slow; not in make test)
	STARTS_N=$(STARTS_N) STARTS_TENANTS=$(STARTS_TENANTS) STARTS_CONNECTIONS=$(STARTS_CONNECTIONS) \
	  STARTS_BASELINE=$(STARTS_BASELINE) STARTS_BASELINE_N=$(STARTS_BASELINE_N) \
	  $(GO) test -count=1 -timeout 120m -run 'UnderLoad|^TestMakeRunStopsOnSIGTERM$$' -v ./test/starts/

# bench-start-cost: BENCH_COST_N local TenantClusters (no workers) applied at once, then one alone,
# with this tree's butler-localprovider and BENCH_COST_BASELINE's (a git revision, built into
# _output/bench), swapped into one plane between sides, in BENCH_COST_PAIRS alternating pairs
# within about 13 minutes: the CPU the tenants' kube-apiservers took until Ready, the provider's
# and its datastore's, time to all Ready, create -> ControlPlaneReady of one alone
# (test/starts TestTenantStartCost). Rows in _output/bench/start-cost.tsv. Not in make test.
BENCH_COST_BASELINE ?= HEAD~1
BENCH_COST_N        ?= 8
BENCH_COST_PAIRS    ?= 3
bench-start-cost: build ## tenant starts with this provider vs BENCH_COST_BASELINE's: CPU and time to Ready, in pairs
	rm -rf _output/bench/baseline-src && mkdir -p _output/bench/baseline-src
	git archive $(BENCH_COST_BASELINE) | tar -x -C _output/bench/baseline-src
	cd _output/bench/baseline-src && $(GO) build -o $(CURDIR)/_output/bench/butler-localprovider.baseline ./cmd/butler-localprovider
	COST_BASELINE_PROVIDER=$(CURDIR)/_output/bench/butler-localprovider.baseline COST_BIN=$(CURDIR)/$(BIN) \
	  COST_N=$(BENCH_COST_N) COST_PAIRS=$(BENCH_COST_PAIRS) $(GO) test -count=1 -timeout 20m -run '^TestTenantStartCost$$' -v ./test/starts/

# bench-hibernation: the slow hibernation checks (docs/hibernation.md): a schedule's times, five
# minutes asleep with no wake, wake latency against the tenant's cold kube-apiserver start and a
# cold create, as ratios. About 11 minutes; not in make test.
bench-hibernation: build ## the slow hibernation checks (about 11 min; not in make test)
	$(GO) test -count=1 -timeout 30m -run '^TestSlowHibernation' -v ./test/e2e/plane/

# bench-density: BENCH_DENSITY_N local TenantClusters created hibernated with wake on request (each
# readied without starting; at most BENCH_DENSITY_AWAKE not yet asleep at once), then the
# management plane's RSS and idle CPU per hibernated cluster against before the first, every endpoint
# held, and BENCH_DENSITY_WAKES woken by kubectl. Writes _output/bench/density-n<N>.md. Long (about
# 2-3 s per cluster here); not part of `make test`.
# BENCH_ARGS=-density-ran makes each cluster run once first (one worker, data written, then
# hibernated): P8 as issue 40 asks for it.
BENCH_DENSITY_N     ?= 1000
BENCH_DENSITY_AWAKE ?= 40
BENCH_DENSITY_WAKES ?= 5
bench-density: build bench-bin kube-versions ## BENCH_DENSITY_N hibernated clusters: memory and idle CPU per cluster
	$(BIN)/bench -density $(BENCH_DENSITY_N) -density-awake $(BENCH_DENSITY_AWAKE) -density-wakes $(BENCH_DENSITY_WAKES) $(BENCH_ARGS)

# bench-snapshot: a tenant's snapshot (10,000 and 100,000 keys among nine other tenants on one
# etcd) against the whole datastore's snapshot (what etcdctl snapshot save streams) and a plain
# range read of the prefix, in one run, with the heap it holds; its restore's write into a fresh
# prefix against plain writes of the same keys; the peak RSS of separate processes taking and
# restoring it (the embedded etcd not counted) (docs/concepts/snapshots.md). About 20 s.
bench-snapshot: ## a tenant's snapshot and restore against whole-datastore baselines
	SNAPSHOT_BENCH=1 $(GO) test -count=1 -timeout 10m -run '^TestSnapshotFigures$$' -v ./pkg/snapshot/

# bench-restore: TestSnapshotCloneAndRestore at the issue's 10,000 objects: a clone and an in-place
# restore of that tenant, each timed to the control plane's /readyz, the in-place one against the
# cold start of its own kube-apiserver inside it, with the provider's steps (docs/concepts/snapshots.md).
# About 3 minutes with the plane's start; not part of `make test`.
bench-restore: build kube-versions ## clone and in-place restore of a 10,000-object tenant, timed
	SNAPSHOT_E2E_OBJECTS=10000 $(GO) test -count=1 -timeout 20m -run '^TestSnapshotCloneAndRestore$$' -v ./test/e2e/plane/

# weed: SeaweedFS's weed (an S3-compatible server) into _output/bin from the pinned module in
# hack/weed (hack/build-weed.sh); its first build is long (docs/concepts/snapshots.md), later ones seconds.
weed: ## SeaweedFS's weed (S3 server for test-s3) into _output/bin
	hack/build-weed.sh

# test-s3: the S3 snapshot store against a real S3-compatible server: weed on loopback, a local
# tenant snapshotted into its bucket and restored in place from it (TestS3*). Not in make test:
# building weed the first time takes minutes.
test-s3: build kube-versions weed ## the S3 snapshot store against weed on loopback (not in make test)
	$(GO) test -count=1 -timeout 20m -run '^TestS3' -v ./test/e2e/plane/

# test-faults: the fault battery (docs/development/testing.md): replicas SIGKILLed under allocation load,
# etcd killed under creates, the workers' leader killed with 20 local clusters provisioning, on a
# plane of two butler-apiserver replicas. Not part of `make test`; CI runs it after.
FAULTS_PLANE := BUTLER_APISERVER_REPLICAS=2 RESTART_GRACE=90
test-faults: build ## the fault battery on a two-replica plane
	$(FAULTS_PLANE) $(GO) test -vet=off -count=1 -timeout 30m -run '^TestFault' -v ./test/e2e/nodes/

# test-realnode-faults: CI's stage for both of the above, one go test on one two-replica plane
# (one plane start and one build instead of two), R4 with 10 clusters instead of 20 (about 3 of
# its 6.5 minutes, within CI's budget; make test-faults keeps 20). The fault tests are the package's
# sequential tests (test/e2e/nodes), so Go runs them first: each restarts what it killed, and the
# last deletes its clusters and checks that nothing of them is left, so the real nodes start on a
# whole plane. The three real-node tests are parallel, so Go starts them together (-parallel 3)
# once the fault tests ended.
test-realnode-faults: build kube-versions ## test-realnode and test-faults on one plane (root; CI)
	$(realnode-deps)
	BUTLER_E2E_REALNODE=1 R4_CLUSTERS=10 $(FAULTS_PLANE) $(GO) test -vet=off -count=1 -timeout 45m -parallel 3 -run '^(TestFault|TestRealNode|TestGitOpsTenant)' -v ./test/e2e/nodes/

# fuzz: each fuzz target for FUZZTIME (go test -fuzz takes one target at a time); new crashers
# land in testdata/fuzz of the package. Not part of `make test`; plain `go test` runs the seeds.
FUZZTIME ?= 10s
FUZZ_PKG := ./pkg/apis/butler/validation/
fuzz: ## each fuzz target for FUZZTIME (CI)
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeJSON$$' -fuzztime $(FUZZTIME) $(FUZZ_PKG)
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeYAML$$' -fuzztime $(FUZZTIME) $(FUZZ_PKG)
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeProtobuf$$' -fuzztime $(FUZZTIME) $(FUZZ_PKG)

# bench: the aggregated API against Butler's own CRDs (renamed to crd.butlerlabs.dev) in one
# kube-apiserver, BENCH_N TenantClusters each; prints the table and writes it to _output/bench.
# Not part of `make test`. BENCH_ARGS="-profile-seconds 10" also saves CPU profiles there.
# butler-apiserver runs without its workers: the CRDs have no controller, and the workers would
# reconcile the bench's thousands of TenantClusters on the same two cores while it measures.
BENCH_N    ?= 5000
BENCH_ARGS ?=
bench: build bench-bin ## the aggregated API against butler's own CRDs, BENCH_N objects each
	$(BIN)/bench -n $(BENCH_N) -butler-args=--enable-workers=false $(BENCH_ARGS)

# bench-report: runs the figures of docs/performance.md and writes it (generated; do not edit it
# by hand): each figure in BENCH_PAIRS pairs of subject and baseline, each pair on a fresh plane,
# the order alternating, one bench process a pair, each wrapped in BENCH_LOCK (on a shared machine
# BENCH_LOCK="flock /tmp/heavy.lock"). Each figure's runs are kept in test/bench/figures/<ID>.json,
# committed with the document: ONLY=P9 runs only the figures named and renders the others from
# their files (their last runs, each with its commit). P1, P1p, P2, P2b and P5 are measured together
# (any of their names runs all five, BENCH_API_N TenantClusters a side), as are P4 and P9 (the
# deletes of the clusters each P9 side wrote, BENCH_P9_N of them), P11 and P11r
# (BENCH_P11_N keys). P7m runs three local tenants' processes at a time (TestTenantFootprint).
# P6 and P6c time creates of local TenantClusters, with a spare control plane and cold, against their kube-apiserver's cold first start (TestSlowCreateFigures).
# P7 holds BENCH_P7_N local tenant control planes awake for 10 minutes (a goal, not a ratio).
# P8 runs BENCH_P8_N local clusters once each (a worker, data), hibernates them, and measures the
# plane's PSS per cluster: one run, about 100 minutes here (the longest figure: 5.5 s a cluster).
# P13 and P13m are real worker nodes beside kwok's (root, with make test-realnode's dependencies).
# Figures not yet reproduced are listed in the document with why. Not part of `make test`.
# Every figure takes about 3 hours on two cores (P8 100 min, P7 26, P9 18, P7m 14, the rest
# 20), measured figure by figure on 2026-11-30; P12 (real Steward) is asked for by name.
BENCH_REPORT_FIGURES := P2 P3 P6 P7 P7m P8 P9 P10 P11 P13
ONLY        ?= $(BENCH_REPORT_FIGURES)
BENCH_PAIRS ?= 3
# Figures whose 3 pairs spread wider than 25% (P3's Services side slows as they accumulate; P5's
# memory) run 5 unless BENCH_PAIRS is given on the command line.
wide_pairs = $(if $(filter command line,$(origin BENCH_PAIRS)),$(BENCH_PAIRS),5)
BENCH_API_PAIRS ?= $(wide_pairs)
BENCH_P3_PAIRS  ?= $(wide_pairs)
BENCH_P9_N  ?= 200
BENCH_API_N ?= 5000
BENCH_P11_N ?= 100000
BENCH_P7_N  ?= 100
BENCH_P8_N  ?= 1000
BENCH_LOCK  ?=
BENCH_COMMIT = $(shell git describe --always --dirty)
bench-report: build bench-bin kube-versions ## run the figures of docs/performance.md and regenerate it
	$(GO) build -o $(BIN)/butler-localprovider ./cmd/butler-localprovider
	@mkdir -p _output/bench; start=$$(date +%s); failed=; api=; snap=; stw=; realnode=; lifecycle=; create=; \
	for fig in $(ONLY); do \
	  case $$fig in \
	  P4|P9) [ -n "$$lifecycle" ] && continue; lifecycle=1; \
	      for k in $$(seq 0 $$(( $(BENCH_PAIRS) - 1 ))); do \
	        $(BENCH_LOCK) $(BIN)/bench -lifecycle $(BENCH_P9_N) -lifecycle-pair $$k -commit $(BENCH_COMMIT) $(BENCH_ARGS) || { failed="$$failed P4-P9"; break; }; \
	      done ;; \
	  P1|P1p|P2|P2b|P5) [ -n "$$api" ] && continue; api=1; \
	      for k in $$(seq 0 $$(( $(BENCH_API_PAIRS) - 1 ))); do \
	        $(BENCH_LOCK) $(BIN)/bench -api-pair $$k -n $(BENCH_API_N) -rounds 10 -watch-rounds 2 -butler-args=--enable-workers=false \
	          -commit $(BENCH_COMMIT) $(BENCH_ARGS) || { failed="$$failed P1-P2b"; break; }; \
	      done ;; \
	  P3) rm -f _output/bench/p3-pairs.tsv; \
	      $(BENCH_LOCK) env P3_PAIRS=$(BENCH_P3_PAIRS) P3_PAIRS_OUT=$(CURDIR)/_output/bench/p3-pairs.tsv \
	        $(GO) test -count=1 -timeout 20m -run '^$$' -bench AllocationRate -benchtime $$(( $(BENCH_P3_PAIRS) * 1000 ))x ./test/e2e/plane/ && \
	      $(BIN)/bench -pairs P3=_output/bench/p3-pairs.tsv -commit $(BENCH_COMMIT) || failed="$$failed P3" ;; \
	  P6|P6c) [ -n "$$create" ] && continue; create=1; rm -f _output/bench/p6-pairs.tsv _output/bench/p6c-pairs.tsv; \
	      $(BENCH_LOCK) env CREATE_BENCH=1 CREATE_PAIRS=$(BENCH_PAIRS) CREATE_PAIRS_OUT=$(CURDIR)/_output/bench/p6-pairs.tsv \
	        CREATE_COLD_PAIRS_OUT=$(CURDIR)/_output/bench/p6c-pairs.tsv \
	        $(GO) test -vet=off -count=1 -timeout 30m -run '^TestSlowCreateFigures$$' -v ./test/e2e/plane/ && \
	      $(BIN)/bench -pairs P6=_output/bench/p6-pairs.tsv,P6c=_output/bench/p6c-pairs.tsv -commit $(BENCH_COMMIT) || failed="$$failed P6" ;; \
	  P7) $(BENCH_LOCK) $(BIN)/bench -local 0 -capacity $(BENCH_P7_N) -capacity-step 10 -capacity-workers 0 -capacity-hold 10m \
	        -idle 20s -min-free-mib 1024 -commit $(BENCH_COMMIT) $(BENCH_ARGS) || failed="$$failed P7" ;; \
	  P7m) rm -f _output/bench/p7m-pairs.tsv; \
	      $(BENCH_LOCK) env BUTLER_FOOTPRINT_BIN=$(CURDIR)/$(BIN) BUTLER_FOOTPRINT_N=3 BUTLER_FOOTPRINT_PAIRS=$(BENCH_PAIRS) \
	        BUTLER_FOOTPRINT_PAIRS_OUT=$(CURDIR)/_output/bench/p7m-pairs.tsv \
	        $(GO) test -count=1 -timeout 60m -run '^TestTenantFootprint$$' -v ./pkg/localprovider/controlplane/ && \
	      $(BIN)/bench -pairs P7m=_output/bench/p7m-pairs.tsv -n 3 -commit $(BENCH_COMMIT) || failed="$$failed P7m" ;; \
	  P8) $(BENCH_LOCK) $(BIN)/bench -density $(BENCH_P8_N) -density-ran -density-awake 40 -density-wakes 5 -density-timeout 150m \
	        -density-record $(CURDIR)/test/bench/figures/runs/P8.json -commit $(BENCH_COMMIT) $(BENCH_ARGS) || failed="$$failed P8" ;; \
	  P10) rm -f _output/bench/p10-pairs.tsv; \
	      $(BENCH_LOCK) env WAKE_BENCH=1 WAKE_PAIRS=$(BENCH_PAIRS) WAKE_PAIRS_OUT=$(CURDIR)/_output/bench/p10-pairs.tsv \
	        $(GO) test -vet=off -count=1 -timeout 30m -run '^TestSlowHibernationWakeFigures$$' -v ./test/e2e/plane/ && \
	      $(BIN)/bench -pairs P10=_output/bench/p10-pairs.tsv -commit $(BENCH_COMMIT) || failed="$$failed P10" ;; \
	  P11|P11r) [ -n "$$snap" ] && continue; snap=1; rm -f _output/bench/p11-pairs.tsv _output/bench/p11r-pairs.tsv; \
	      $(BENCH_LOCK) env SNAPSHOT_BENCH=1 SNAPSHOT_BENCH_SIZES=$(BENCH_P11_N) SNAPSHOT_PAIRS=$(BENCH_PAIRS) SNAPSHOT_PAIRS_OUT=$(CURDIR)/_output/bench \
	        $(GO) test -count=1 -timeout 20m -run '^TestSnapshotFigures$$' -v ./pkg/snapshot/ && \
	      $(BIN)/bench -pairs P11=_output/bench/p11-pairs.tsv,P11r=_output/bench/p11r-pairs.tsv -n $(BENCH_P11_N) -commit $(BENCH_COMMIT) || failed="$$failed P11" ;; \
	  P12|P12m) [ -n "$$stw" ] && continue; stw=1; rm -f _output/bench/p12-pairs.tsv _output/bench/p12m-pairs.tsv; \
	      hack/build-steward.sh && hack/install-cluster-deps.sh && \
	      $(BENCH_LOCK) env TEST_STEWARD=only STEWARD_PAIRS=$(BENCH_PAIRS) hack/test-cluster.sh && \
	      $(BIN)/bench -pairs P12=_output/bench/p12-pairs.tsv,P12m=_output/bench/p12m-pairs.tsv -commit $(BENCH_COMMIT) || failed="$$failed P12" ;; \
	  P13|P13m) [ -n "$$realnode" ] && continue; realnode=1; rm -f _output/bench/p13-pairs.tsv _output/bench/p13m-pairs.tsv; \
	      hack/install-cluster-deps.sh && hack/build-kube.sh kubelet kube-proxy && hack/build-node-images.sh >/dev/null && \
	      $(BENCH_LOCK) env BUTLER_E2E_REALNODE=1 REALNODE_BENCH=1 REALNODE_PAIRS=$(BENCH_PAIRS) REALNODE_PAIRS_OUT=$(CURDIR)/_output/bench \
	        $(GO) test -vet=off -count=1 -timeout 30m -run '^TestRealNodeFigures$$' -v ./test/e2e/nodes/ && \
	      $(BIN)/bench -pairs P13=_output/bench/p13-pairs.tsv,P13m=_output/bench/p13m-pairs.tsv -commit $(BENCH_COMMIT) || failed="$$failed P13" ;; \
	  *) echo "bench-report: $$fig is not reproduced yet (docs/performance.md says why)" ;; \
	  esac; \
	done; \
	$(BIN)/bench -report docs/performance.md -report-ran "$(ONLY)" -commit $(BENCH_COMMIT) -report-took $$(( $$(date +%s) - start ))s; \
	echo "bench-report: wrote docs/performance.md"; \
	if [ -n "$$failed" ]; then echo "bench-report: failed:$$failed (their sections hold the pairs that completed)"; exit 1; fi

# bench-lifecycle: BENCH_LIFECYCLE_N TenantClusters (AWS provider, Steward played by the bench)
# applied at once until all their objects are written, then all deleted, with butler-apiserver's
# CPU and RSS; writes _output/bench/lifecycle-n<N>.md. Not part of `make test`.
BENCH_LIFECYCLE_N ?= 200
bench-lifecycle: build bench-bin ## BENCH_LIFECYCLE_N TenantClusters created and deleted at once, with CPU and RSS
	$(BIN)/bench -lifecycle $(BENCH_LIFECYCLE_N) $(BENCH_ARGS)

# bench-local: the local provider on the real local plane: BENCH_LOCAL_N TenantClusters of three
# Talos workers created one after the other (each deleted before the next), create -> control plane
# Ready and -> Ready with 3 nodes (median, min, max) and where the time goes; then clusters of
# one worker, BENCH_LOCAL_STEP at a time up to BENCH_LOCAL_MAX, with the RSS and idle CPU of
# their processes after each step. Writes _output/bench/local-*.md. Not part of `make test`;
# run it on an idle machine (set TENANT_PORT_RANGE if another plane runs).
BENCH_LOCAL_N    ?= 5
BENCH_LOCAL_MAX  ?= 40
BENCH_LOCAL_STEP ?= 5
bench-local: build bench-bin ## the local provider's create times and capacity on the real local plane
	$(BIN)/bench -local $(BENCH_LOCAL_N) -capacity $(BENCH_LOCAL_MAX) -capacity-step $(BENCH_LOCAL_STEP) $(BENCH_ARGS)

# The benchmark driver of bench, bench-lifecycle and bench-local (phony: go decides what to rebuild).
bench-bin: ## the benchmark driver into _output/bin
	$(GO) build -o $(BIN)/bench ./test/bench

# bench-ipam: the allocator micro-benchmark, then P3: allocations/s vs ClusterIPs/s through one kube-apiserver, in alternating pairs
bench-ipam: build ## the allocator micro-benchmark and P3 (allocations/s vs ClusterIPs/s)
	$(GO) test -run '^$$' -bench . -benchtime 2s ./pkg/ipam/
	$(GO) test -run '^$$' -bench AllocationRate -benchtime 2000x ./test/e2e/plane/

clean: ## remove _output
	rm -rf _output
