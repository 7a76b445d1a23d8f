# The two commands a newcomer needs: `make demo` and `make test`.
SHELL := /bin/bash
GO ?= go
CLUSTER := hack/cluster
CLUSTER_BIN := $(CLUSTER)/bin
KUBECTL := $(CLUSTER_BIN)/kubectl
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/tmplop/operator/cmd/operator/app.version=$(VERSION)

.PHONY: all build test vet fmt fuzz bench demo cluster-bin cluster-up cluster-down clean

all: build

## build: the operator binary, bin/operator
build:
	$(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o bin/operator ./cmd/operator

## image: the operator's image without a container engine (docs/image.md): a
## static bin/operator-linux-$(GOARCH) on an empty base, written as
## bin/image.tar (docker load, crane push) and bin/oci/ (an OCI layout).
## make image IMAGE=registry.example/operator:v1 GOARCH=arm64
.PHONY: image
image: GOARCH ?= $(shell $(GO) env GOARCH)
image: IMAGE ?= operator:$(VERSION)
image:
	CGO_ENABLED=0 GOOS=linux GOARCH=$(GOARCH) $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o bin/operator-linux-$(GOARCH) ./cmd/operator
	cd hack/image && env -u GOOS -u GOARCH $(GO) run . -binary $(CURDIR)/bin/operator-linux-$(GOARCH) -arch $(GOARCH) \
		-image '$(IMAGE)' -version '$(VERSION)' -revision "$$(git rev-parse HEAD 2>/dev/null)" \
		-tarball $(CURDIR)/bin/image.tar -layout $(CURDIR)/bin/oci

## cluster-bin: etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
## kubectl and kwok in hack/cluster/bin, looked at again only when their
## pinned versions change. They come from a per-user cache keyed by those
## versions and the Go toolchain (CLUSTER_BIN_CACHE, by default
## ~/.cache/tmplop-operator/cluster-bin/<key>/): a fresh clone reuses what
## another clone built, and a build happens only on a miss
## (hack/cluster/scripts/cluster-bin.sh).
cluster-bin: $(CLUSTER_BIN)/.stamp
$(CLUSTER_BIN)/.stamp: $(CLUSTER)/go.mod $(CLUSTER)/go.sum $(CLUSTER)/kwok/go.mod $(CLUSTER)/kwok/go.sum \
		$(CLUSTER)/scripts/cluster-bin.sh $(CLUSTER)/scripts/build.sh $(CLUSTER)/scripts/stages.sh \
		$(wildcard $(CLUSTER)/cmd/*/*)
	bash $(CLUSTER)/scripts/cluster-bin.sh
	touch $@

## clean-cluster-cache: remove every entry of that cache, of every key (about
## 450 MB each; entries of older keys are otherwise kept). The clones'
## hack/cluster/bin keep their files.
.PHONY: clean-cluster-cache
clean-cluster-cache:
	bash $(CLUSTER)/scripts/cluster-bin.sh clean

## cluster-up / cluster-down: a local control plane on 127.0.0.1 (hack/cluster/.run)
cluster-up: cluster-bin
	bash $(CLUSTER)/scripts/up.sh
cluster-down:
	bash $(CLUSTER)/scripts/down.sh

## test: everything, unit and integration, each integration package on a
## control plane of its own (test/sharding after the others, alone). Every
## fuzz target replays its seeds and the inputs found so far
## (testdata/fuzz/<Target>/), as every go test does; exploring new inputs is
## make fuzz's job, not the gate's (docs/testing.md).
test: cluster-bin vet
	@test -z "$$(gofmt -l cmd engine test hack/bench hack/floor hack/resident)" || { echo "gofmt needed:"; gofmt -l cmd engine test hack/bench hack/floor hack/resident; exit 1; }
	env -u KUBECONFIG $(GO) test -race -count=1 -timeout 25m $$($(GO) list ./... | grep -v '/test/sharding$$')
	@# Alone: three operators and their plane on 2 cores, whose Lease
	@# renewals must not wait behind another package's control plane.
	env -u KUBECONFIG $(GO) test -race -count=1 -timeout 25m ./test/sharding/
	cd hack/image && $(GO) test -count=1 ./...

## fuzz: every fuzz target explores new inputs for FUZZTIME each (a
## duration or a count: make fuzz FUZZTIME=10m, about two hours for the 12
## targets; FUZZ_TARGETS=regexp for some). What fails is written to
## testdata/fuzz/<Target>/: commit it with the fix and make test replays it
## from then on (hack/fuzz.sh, docs/testing.md).
FUZZTIME ?= 1m
FUZZ_TARGETS ?= .
fuzz:
	FUZZTIME=$(FUZZTIME) FUZZ_TARGETS='$(FUZZ_TARGETS)' GO=$(GO) bash hack/fuzz.sh

vet:
	$(GO) vet ./...

fmt:
	gofmt -w cmd engine test

## bench: the engine's Go micro-benchmarks, then the operator against the
## limit (a minimal client doing exactly the requests the work needs) on a
## fresh etcd + kube-apiserver for each of BENCH_N objects (hack/bench); writes
## docs/benchmarks.md, .json and .png. Each client's cold run 3 times,
## interleaved, verdicts on the medians: a bit over an hour for N=1,000 and
## 10,000 on 2 cores; needs the control plane's binaries (make cluster-bin).
## make bench BENCH_N=1000 for a shorter run (about 10 minutes);
## BENCH_KIND=chart measures the BenchApp served by a Helm chart
## (docs/benchmarks-chart.md). Each report's summary table shows the other
## kind's rows from its report in docs/ (rewrite one with go run . -render).
## BENCH_FLAGS=-controller (the default) also runs an expert's hand-written
## controller for the BenchApp (typed informers read as protobuf, a typed
## work queue; hack/bench/internal/controller) in the same interleaved turns,
## cold only: half as long again; BENCH_FLAGS= leaves it out.
BENCH_N ?= 1000,10000
BENCH_KIND ?= folder
BENCH_FLAGS ?= -controller
bench: cluster-bin
	env -u KUBECONFIG $(GO) test -run '^$$' -bench . -benchmem ./engine/... ./test/examples/
	cd hack/bench && env -u KUBECONFIG $(GO) run . -kind $(BENCH_KIND) -n $(BENCH_N) $(BENCH_FLAGS) -out ../../docs

## bench-30k: how the cost grows past make bench's N: the operator, the
## hand-written controller and the limit at BENCH_30K_N objects, one cold
## run each on a fresh control plane, then the operator's and the limit's
## later phases without the burst (about 90 minutes on 2 cores, most of it
## the control plane allocating 30,000 Services' ClusterIPs); writes
## docs/benchmarks-30k.{md,json,png}, then renders docs/benchmarks.md again so
## that its table "How the cost grows with N" and docs/benchmarks-growth.png
## have this N beside make bench's (docs/performance.md).
BENCH_30K_N ?= 30000
.PHONY: bench-30k
bench-30k: cluster-bin
	cd hack/bench && env -u KUBECONFIG $(GO) run . -kind folder -n $(BENCH_30K_N) -runs 1 -controller -edits 20 -burst=false -files benchmarks-30k -out ../../docs
	test ! -f docs/benchmarks.json || { cd hack/bench && $(GO) run . -render ../../docs/benchmarks.json -out ../../docs; }

## bench-conversion: the CRD conversion webhook of a kind of two versions on
## the local control plane (hack/bench -conversion, about 5 minutes): a LIST
## of BENCH_CONVERSION_N objects at the converted version beside conversion
## None, the writes the version's watch cache converts, the render's time per
## object and the operator's RSS; writes docs/benchmarks-conversion.{md,json}
## (docs/versions.md).
BENCH_CONVERSION_N ?= 1000
.PHONY: bench-conversion
bench-conversion: cluster-bin
	cd hack/bench && env -u KUBECONFIG $(GO) run . -conversion -n $(BENCH_CONVERSION_N) -runs 5 -out ../../docs

## test-sharding-chaos: only the chaos run of make test (test/sharding
## TestChaos: three shards behind fault proxies, SIGKILLed and replaced
## while objects are created, changed and deleted), CHAOS_RUNS times
## (default 1), about a minute each: make test-sharding-chaos CHAOS_RUNS=10
CHAOS_RUNS ?= 1
.PHONY: test-sharding-chaos
test-sharding-chaos: cluster-bin
	env -u KUBECONFIG $(GO) test -count=$(CHAOS_RUNS) -failfast -v -run TestChaos ./test/sharding/

## bench-sharded-ten: ten replicas of one ring on SHARDING_TEN_N objects
## (default 10,000), then the loss of one: spread, memory per replica, the
## time and requests of the moves (test/sharding TestTenShards, about 15
## minutes; figures in docs/sharding.md)
SHARDING_TEN_N ?= 10000
.PHONY: bench-sharded-ten
bench-sharded-ten: cluster-bin
	SHARDING_TEN=1 SHARDING_TEN_N=$(SHARDING_TEN_N) env -u KUBECONFIG $(GO) test -count=1 -v -timeout 60m -run TestTenShards ./test/sharding/

## bench-sharded: the operator as 3 replicas, the shards of one ring, beside
## one replica and the limit at N=10,000, once each (about 25 minutes);
## writes docs/benchmarks-sharded.{md,json}, leaving docs/benchmarks.md to
## make bench (docs/sharding.md).
BENCH_SHARDED_N ?= 10000
.PHONY: bench-sharded
bench-sharded: cluster-bin
	rm -rf bin/bench-sharded
	cd hack/bench && env -u KUBECONFIG $(GO) run . -n $(BENCH_SHARDED_N) -runs 1 -shards 3 -out ../../bin/bench-sharded
	cp bin/bench-sharded/benchmarks-sharded.md bin/bench-sharded/benchmarks-sharded.json docs/

## deploy: the operator in the cluster of the current kubeconfig: deploy/
## (namespace, RBAC, 2 replicas, metrics Service), then the shipped examples'
## CRDs and kind folders (as ConfigMaps). DEPLOY_IMAGE is the image the
## Deployment runs (push it first: docs/image.md). undeploy removes them,
## leaving the CRDs and so every custom resource in place. deploy-sharded
## is deploy with 3 replicas as shards of one ring instead of a leader and a
## standby (deploy/sharding, docs/sharding.md); deploy-cert-manager is deploy
## with the conversion webhook's certificate from cert-manager
## (deploy/cert-manager, docs/versions.md).
DEPLOY_IMAGE ?= operator:$(VERSION)
DEPLOY_KUBECTL ?= $(shell command -v kubectl || echo $(KUBECTL))
DEPLOY_KUSTOMIZATION ?= deploy
.PHONY: deploy deploy-sharded deploy-cert-manager undeploy
deploy-sharded:
	$(MAKE) deploy DEPLOY_KUSTOMIZATION=hack/deploy-sharded
deploy-cert-manager:
	$(MAKE) deploy DEPLOY_KUSTOMIZATION=hack/deploy-cert-manager
deploy:
	$(DEPLOY_KUBECTL) kustomize $(DEPLOY_KUSTOMIZATION) | sed 's|image: operator:[^ ]*$$|image: $(DEPLOY_IMAGE)|' | $(DEPLOY_KUBECTL) apply --server-side -f -
	$(DEPLOY_KUBECTL) apply --server-side -f crds/
	$(DEPLOY_KUBECTL) apply --server-side -k deploy/examples
undeploy:
	$(DEPLOY_KUBECTL) delete --ignore-not-found -k deploy/examples
	$(DEPLOY_KUBECTL) delete --ignore-not-found -k deploy

## demo: local control plane + CRDs + operator on templates/ + examples/
demo: cluster-bin build
	bash hack/demo.sh

clean:
	rm -rf bin
