# rebootwatch — build, test and demo. `make demo` and `make test` are the two
# commands a fresh machine needs (README).
GO        ?= go
BIN       := $(CURDIR)/bin
PKGS      := ./...
# Every test runs under the race detector: sources, the dashboard and the
# agent are concurrent, and a race is a bug even when the test passes.
# Six packages at once (-p 6, three per core): the integration packages
# spend much of their time waiting on an apiserver, a Prometheus or a clock;
# with four at a time both cores were under 90% busy in about half of a
# run's 10-second stretches, with six in 3 to 6 of them, mostly near the
# end (docs/testing.md has the figures).
TESTFLAGS ?= -race -count=1 -timeout 40m -p 6
# The packages to test, the longest first: go test starts packages in the
# order they are named (then ./... adds the rest, each once), so the long
# integration packages do not start last and hold the run's tail
# (docs/testing.md has the per-package times). The packages that wait on a
# Prometheus or an apiserver for 10-20 s follow, so that none of them is
# still waiting when only the small packages' links are left.
TESTPKGS  := ./internal/agent ./deploy ./internal/cli ./internal/lock ./sources/kube \
	./internal/testenv/testcluster ./cmd/rebootwatch ./sources/longhorn ./internal/live ./tui \
	./cmd/kubectl-rebootwatch ./sources/prometheus ./internal/coord/suc ./internal/fleet \
	./internal/coord/kinds ./internal/coord/flatcar ./internal/timewindow ./internal/coord/kured $(PKGS)
# The go command links every test binary again on every run, even when
# nothing it links has changed: about 60 links under -race, a quarter of a
# warm run's CPU on two cores. bin/linkcache (hack/linkcache), the go
# command's -toolexec, copies a link whose inputs it has seen (hashed by
# content) from the user's cache directory instead; it runs every other
# tool untouched. LINKCACHE= (empty) turns it off.
LINKCACHE ?= -toolexec=$(BIN)/linkcache
# golangci-lint (its configuration is .golangci.yml), pinned, fetched through
# the module proxy and compiled by `go run`: the first run on a cold build
# cache compiles it (about 2.7 CPU-minutes: 6.5 minutes on two busy cores), later runs reuse it.
GOLANGCI_LINT ?= github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
# GoReleaser (its configuration is .goreleaser.yaml), pinned and run the same
# way by `make release`: the first run on a cold build cache compiles it.
GORELEASER ?= github.com/goreleaser/goreleaser/v2@v2.15.1
# make release VERSION=v1.2.3 builds the release of the tag v1.2.3 at HEAD;
# without VERSION, a snapshot of HEAD (v<last tag>-snapshot-<commit>).
VERSION ?=

export REBOOTWATCH_BIN_DIR := $(BIN)

.PHONY: all deps build linkcache plugin image release demo test unit integration e2e bench bench-scale lint fmt vet golangci-lint shellcheck testcluster helm screenshots clean help

all: build

# help lists the targets a developer runs.
help:
	@echo 'make demo          the dashboard on the embedded demo cluster (builds first)'
	@echo 'make test          everything CI runs: unit, integration (real apiserver, Prometheus), tmux e2e; -race'
	@echo 'make unit          unit tests only (-race, -short)'
	@echo 'make build         bin/rebootwatch, bin/rebootwatch-agent, bin/kubectl-rebootwatch'
	@echo 'make lint          go vet, golangci-lint (incl. the import rules), shellcheck'
	@echo 'make image         the agent image (OCI, linux/amd64 + arm64) in dist/, no Docker (VERSION=vX.Y.Z to stamp one)'
	@echo 'make release       archives + checksums for 6 platforms, krew manifest, chart, agent image in dist/ (GoReleaser; VERSION=vX.Y.Z for a tag)'
	@echo 'make fmt           gofmt every Go file'
	@echo 'make bench         Go benchmarks (-benchmem)'
	@echo 'make bench-scale   the scale benchmark against a real apiserver (about 10 minutes)'
	@echo 'make screenshots   regenerate screenshots/ from the demo'
	@echo 'make testcluster   build bin/kube-apiserver, bin/etcd, bin/kubectl (cached)'
	@echo 'make helm          build bin/helm for the chart tests (cached)'
	@echo 'make deps          install tmux, prometheus, bash-completion, shellcheck from Debian when missing'

# One go command for the three (-o into the directory, each named after its
# package): it loads the module once, where three took 2.2 s of wall and CPU
# on every make test even with nothing to build (0.8 s for one).
build:
	$(GO) build -o $(BIN)/ ./cmd/rebootwatch ./cmd/rebootwatch-agent ./cmd/kubectl-rebootwatch

# plugin builds the kubectl plugin: put bin/kubectl-rebootwatch on the PATH
# and `kubectl rebootwatch` runs it (deploy/krew holds the krew manifest).
plugin:
	$(GO) build -o $(BIN)/kubectl-rebootwatch ./cmd/kubectl-rebootwatch

# image builds the agent's OCI image in the ignored dist/ with no Docker
# daemon and no base image (hack/image, its own module, with the pinned
# go-containerregistry): the static agent cross-built for linux/amd64 and
# linux/arm64 with the release's flags, a non-root user, the build machine's
# CA bundle (Debian's ca-certificates: make deps) and the OCI labels, as
# dist/rebootwatch-agent-image/ (an OCI layout), its .tar and its .tag (the
# version, the tag to push it under). Same tree, same digests (times are the
# commit's). VERSION=vX.Y.Z stamps that version; without it, the snapshot
# version of HEAD. docs/agent.md#install pushes it and installs the chart.
image:
	cd hack/image && $(GO) run . -root $(CURDIR) -out $(CURDIR)/dist $(if $(VERSION),-version $(VERSION))

# release builds, in the ignored dist/, the archives of rebootwatch,
# kubectl-rebootwatch and rebootwatch-agent for linux, darwin and windows on
# amd64 and arm64 with checksums.txt (GoReleaser, .goreleaser.yaml; nothing
# is published), renders the krew manifest from them and checks it against
# them (hack/krew: dist/rebootwatch-krew.yaml), packages the chart with
# the release's version as its appVersion (hack/package-chart.sh) and builds
# the agent's image of that version (make image; GoReleaser's --clean would
# remove one built before).
# docs/release.md is the whole procedure.
# GoReleaser stops after 1h by default: a cold cross-build of 18 binaries on
# two busy cores took longer (about 29 CPU-minutes), hence --timeout 3h.
# helm is built only when missing (an existing bin/helm is used as it is,
# whatever the age of hack/helm/go.mod).
release:
	@test -x $(BIN)/helm || $(MAKE) helm
	$(GO) run $(GORELEASER) release --clean --skip=publish --timeout 3h $(if $(VERSION),,--snapshot)
	@tag=$$($(GO) run ./hack/krew -dist dist) && \
	  if [ -n "$(VERSION)" ] && [ "$$tag" != "$(VERSION)" ]; then echo "make release: built $$tag, not $(VERSION)" >&2; exit 1; fi && \
	  HELM=$(BIN)/helm bash hack/package-chart.sh "$$tag" dist/ && \
	  $(MAKE) image VERSION="$$tag"
	@ls -1d dist/*.tar.gz dist/*.zip dist/*.tgz dist/checksums.txt dist/rebootwatch-krew.yaml dist/rebootwatch-agent-image*

demo: build
	$(BIN)/rebootwatch --demo

# kube-apiserver and etcd for the integration tests, and kubectl for the
# plugin's test, built once from the pinned module in hack/testcluster and
# cached in bin/.
testcluster: $(BIN)/kube-apiserver $(BIN)/etcd $(BIN)/kubectl

$(BIN)/kube-apiserver: hack/testcluster/go.mod
	cd hack/testcluster && $(GO) build -o $(BIN)/kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver

$(BIN)/etcd: hack/testcluster/go.mod
	cd hack/testcluster && $(GO) build -o $(BIN)/etcd go.etcd.io/etcd/server/v3

# Written under a temporary name and moved once built: bin/ may be shared.
$(BIN)/kubectl: hack/testcluster/go.mod
	cd hack/testcluster && $(GO) build -o $(BIN)/.kubectl.tmp k8s.io/kubernetes/cmd/kubectl && mv $(BIN)/.kubectl.tmp $(BIN)/kubectl

# helm for the chart tests (helm lint, helm template), built once from the
# pinned module in hack/helm and cached in bin/ (about 310 CPU-seconds cold).
helm: $(BIN)/helm

$(BIN)/helm: hack/helm/go.mod
	cd hack/helm && $(GO) build -o $(BIN)/helm helm.sh/helm/v4/cmd/helm

# tmux and prometheus from Debian, when missing (hack/deps.sh).
deps:
	bash hack/deps.sh

unit: linkcache
	$(GO) test $(TESTFLAGS) $(LINKCACHE) -short $(PKGS)

# linkcache builds bin/linkcache (the go command leaves an up-to-date binary
# as it is).
linkcache:
	$(GO) build -o $(BIN)/linkcache ./hack/linkcache

# test runs everything: unit tests, integration tests against a real
# kube-apiserver + etcd and Prometheus, and the tmux end-to-end script.
# The script runs alongside the Go tests (about 25 s, nearly all of it
# sleeping on the demo's frames, under 3 CPU-seconds) instead of after them;
# its report is printed once both are done, and either failing fails.
test: deps build linkcache testcluster helm
	@e2e=$$(mktemp) && pid= && \
	if command -v tmux >/dev/null 2>&1; then bash hack/e2e-tmux.sh >"$$e2e" 2>&1 & pid=$$!; \
	else echo "tmux not installed: skipping the tmux end-to-end script" >"$$e2e"; fi; \
	echo 'REBOOTWATCH_INTEGRATION=1 $(GO) test $(TESTFLAGS) $(LINKCACHE) $(TESTPKGS)'; \
	REBOOTWATCH_INTEGRATION=1 $(GO) test $(TESTFLAGS) $(LINKCACHE) $(TESTPKGS); gorc=$$?; \
	e2erc=0; if [ -n "$$pid" ]; then wait $$pid || e2erc=$$?; fi; \
	echo "--- hack/e2e-tmux.sh (ran alongside go test)"; cat "$$e2e"; rm -f "$$e2e"; \
	[ $$gorc -eq 0 ] && [ $$e2erc -eq 0 ]

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

# The scale benchmark (issue 14, docs/performance.md): seeds a real
# apiserver with 1,000 nodes + 3,000 Longhorn volumes, then 5,000 + 10,000,
# and measures --snapshot, the dashboard's model, the agent and kubectl's
# runbook, min/median/max of REBOOTWATCH_BENCH_RUNS (default 5) runs each.
# About 10 minutes on 2 cores.
bench-scale: testcluster
	REBOOTWATCH_INTEGRATION=1 $(GO) test -run '^$$' -bench Scale -benchtime 1x -timeout 60m ./internal/testenv/scalebench/

fmt:
	gofmt -w $$(git ls-files '*.go')

vet:
	$(GO) vet $(PKGS)

golangci-lint:
	$(GO) run $(GOLANGCI_LINT) run $(PKGS)

# shellcheck: the shell scripts CI and the tests run (Debian's shellcheck,
# installed by hack/deps.sh).
shellcheck: deps
	shellcheck hack/*.sh .ci/run

# lint: go vet, golangci-lint (staticcheck, errcheck, govet, misspell,
# revive, ineffassign, unused, depguard's import rules from
# docs/architecture.md, and the gofmt check: .golangci.yml), then shellcheck.
lint: vet golangci-lint shellcheck

screenshots: build
	bash hack/screenshots.sh

clean:
	rm -rf $(BIN)
