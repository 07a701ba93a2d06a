# Every target installs dependencies first when node_modules is missing or older than the lockfile.
# run and test also set the machine up first (scripts/setup-machine.sh: bubblewrap and the sandbox
# network tools, installed when missing and root on Debian), on node's own recipe line so that
# `make -n run` stays the one command test/hardening/access-control.test.ts starts.
SHELL := /bin/bash

# Node 24 for everything below (scripts/node.sh): the machine's node when it is 24.x, else the pinned
# release under .node/, fetched from the npm registry when missing. Its folder goes first on PATH, so
# npm, npx and every node a recipe or an npm script starts are that one; it says which in one line.
NODE_BIN := $(shell scripts/node.sh)
ifeq ($(NODE_BIN),)
$(error scripts/node.sh found no Node 24 and could not fetch one (its message is above))
endif
NODE := $(NODE_BIN)/node
export PATH := $(NODE_BIN):$(PATH)

NODE_STAMP := node_modules/.install-stamp
SETUP_MACHINE := scripts/setup-machine.sh

# The web console, built by Vite from src/console (and the daemon's files it imports) into dist/console,
# which the daemon serves at /. `npm ci` builds it too (the `prepare` script); this rebuilds it when a
# source is newer. The daemon's files are the console bundle of .dependency-cruiser.mjs, which
# `make check` holds to this list.
CONSOLE := dist/console/index.html
CONSOLE_SOURCES := $(shell find src/console src/views -type f) src/swarm-api.ts src/api/limits.ts src/ledger/run-events.ts src/harness/protocol.ts machines/drain.ts

.PHONY: run test check check-types check-lint check-layers format bench sandbox-image install link

install: $(NODE_STAMP) $(CONSOLE)

# scripts/patch-packages.mjs is the install's `postinstall`: a change to it installs again.
$(NODE_STAMP): package-lock.json package.json scripts/patch-packages.mjs
	npm ci --no-audit --no-fund
	@touch $(NODE_STAMP)

# Order-only on the install: `npm ci` has just built it (prepare), so a fresh install builds it once.
$(CONSOLE): $(CONSOLE_SOURCES) | $(NODE_STAMP)
	npm run --silent build:console

# The node by its full path: the one line `make -n run` prints runs the daemon under Node 24 from any shell.
run: $(NODE_STAMP) $(CONSOLE)
	$(SETUP_MACHINE) && $(NODE) --import tsx src/main.ts

# Tests (docs/testing.md: which suites run on which runtime). Each file runs in a process of its own,
# TEST_CONCURRENCY at a time, in the order given (test/support/run-tests.mjs: the longest first, so
# that none of them starts last and ends the run alone); files keep their own data folders, ports,
# sandboxes and containers. SERIAL_TESTS then run one at a time, with nothing else of the run: their
# assertions need the CPU in time (a 50 ms limit on approval patterns, an abort that must be
# prompt, the console's 2 s open and 50 ms frames at 1,000 agents), or their networked sandboxes fail to start more often on a busy machine (docs/testing.md).
# The spec reporter prints every test and one summary, then the slowest 15 files.
# `make test TESTS="test/e2e/controls.test.ts test/faults/restart.test.ts"` runs chosen files.
# test-fast is the inner loop: the machines, the ledger, views and HTTP on the simulated runtime, with
# no root, no sandbox and no docker.
TEST_CONCURRENCY ?= 3
SLOWEST_TESTS := test/security/docker-containment.test.ts test/faults/restart.test.ts test/e2e/docker.test.ts
SLOW_TESTS := $(SLOWEST_TESTS) $(filter-out $(SLOWEST_TESTS),$(wildcard test/faults/*.test.ts test/e2e/process.test.ts \
	test/machines/reply-*.test.ts test/sandbox/*.test.ts))
TESTS ?= $(SLOW_TESTS) $(filter-out $(SLOW_TESTS),$(shell find test -name "*.test.ts" -not -path "test/cluster/*" | sort))
SERIAL_TESTS := test/e2e/approvals.test.ts test/harness/harness.test.ts test/console/big-run.test.ts
# The reply rule's CPU-bound files first, as above.
FAST_TESTS := $(filter $(SLOW_TESTS),$(wildcard test/machines/*.test.ts)) \
	$(filter-out $(SLOW_TESTS),$(shell find test/machines test/ledger test/http test/api test/service -name "*.test.ts" | sort)) \
	test/console/run-state.test.ts test/console/tree-rows.test.ts test/console/fork-events.test.ts \
	$(addprefix test/e2e/,lifecycle.test.ts spawn.test.ts controls.test.ts forks.test.ts run-list.test.ts openapi-contract.test.ts timeline.test.ts)
TEST_RUN = $(NODE) --import tsx test/support/run-tests.mjs --concurrency=$(TEST_CONCURRENCY)

.PHONY: test-fast test-cluster

test: $(NODE_STAMP) $(CONSOLE)
	$(SETUP_MACHINE) --tests && $(TEST_RUN) $(TESTS) --serial $(filter $(SERIAL_TESTS),$(TESTS))

test-fast: $(NODE_STAMP) $(CONSOLE)
	$(TEST_RUN) $(FAST_TESTS) --serial $(filter $(SERIAL_TESTS),$(FAST_TESTS))

# The cluster runtime's tests (test/cluster, not part of `make test`) on a Docker Swarm of three
# engines in network namespaces on this machine (scripts/test-cluster.sh; docs/testing.md, "The test
# cluster"): down (what an interrupted run may have left), up, its exports into the environment,
# every file one at a time (they cut nodes' links and change their availability, which would disturb
# each other), then down, also when a test fails or make is interrupted. With no file in
# test/cluster it still takes the cluster up and down, and says so. Root only.
# `make test-cluster CLUSTER_TESTS=test/cluster/fork.test.ts` runs chosen files.
CLUSTER_TESTS ?= $(shell find test/cluster -name "*.test.ts" 2>/dev/null | sort)

test-cluster: $(NODE_STAMP) $(CONSOLE) sandbox-image
	$(SETUP_MACHINE) --cluster
	@scripts/test-cluster.sh down
	@trap 'scripts/test-cluster.sh down' EXIT; \
	exports="$$(scripts/test-cluster.sh up)" && eval "$$exports" || exit 1; \
	if [ -z "$(strip $(CLUSTER_TESTS))" ]; then echo "no cluster tests (test/cluster has no *.test.ts)"; exit 0; fi; \
	SWARM_TEST_CLUSTER_REQUIRED=1 $(NODE) --import tsx test/support/run-tests.mjs --concurrency=1 $(CLUSTER_TESTS)

# What CI runs (.ci/run): the types, Biome (format, organised imports and lint, warnings failing too;
# nothing written) and the layer rules.
# `make -k check` runs all three when one fails.
check: check-types check-lint check-layers

check-types: $(NODE_STAMP)
	npx tsc --noEmit -p .
	npx tsc --noEmit -p src/console

check-lint: $(NODE_STAMP)
	npx biome ci --error-on-warnings .

# dependency-cruiser over every folder with JS or TS: no import cycles, and each layer imports only
# what docs/design.md ("Allowed imports") allows; the rules are in .dependency-cruiser.mjs.
LAYER_PATHS := src actors machines test bench bin scripts

check-layers: $(NODE_STAMP)
	npx depcruise $(LAYER_PATHS) --config .dependency-cruiser.mjs --output-type err-long

# Rewrites the tree as Biome wants it: formatting, organised imports and the lint fixes Biome calls safe.
format: $(NODE_STAMP)
	npx biome check --write .

# Benchmarks, not tests: they print markdown tables (docs/benchmarks.md); BENCH_* variables in bench/*.ts.
bench: $(NODE_STAMP)
	npx tsx bench/sandbox.ts
	$(NODE) --expose-gc --import tsx bench/service.ts
	npx tsx bench/ready.ts
	npx tsx bench/prompted-harness.ts
	npx tsx bench/fork.ts
	npx tsx bench/tracing.ts
	npx tsx bench/console.ts
	npx tsx bench/harness-start.ts
	npx tsx bench/control-plane.ts
	$(NODE) --expose-gc --import tsx bench/density.ts

# `swarm`, `swarmd` and `swarmd-mcp` on the PATH: symlinks in $(PREFIX)/bin to bin/*.js, which run
# this checkout's Node 24 whatever node the PATH holds (their first line finds it through the link).
# Again is harmless; a folder it cannot write says what to do instead.
PREFIX ?= /usr/local
LINKED := swarm swarmd swarmd-mcp
link:
	@mkdir -p "$(PREFIX)/bin" 2>/dev/null && [ -w "$(PREFIX)/bin" ] || { \
	  echo "make link: cannot write $(PREFIX)/bin: run it with sudo, or choose a folder of yours: make link PREFIX=$$HOME/.local" >&2; exit 1; }
	@for name in $(LINKED); do ln -sfn "$(CURDIR)/bin/$$name.js" "$(PREFIX)/bin/$$name"; done
	@echo "linked $(LINKED) into $(PREFIX)/bin (they run $(CURDIR)/bin/*.js under this checkout's Node 24)"
	@case ":$$PATH:" in *":$(PREFIX)/bin:"*) ;; *) echo "note: $(PREFIX)/bin is not on your PATH: export PATH=\"$(PREFIX)/bin:\$$PATH\"" ;; esac

# The docker runtime's image, swarmd-sandbox:<version>, built from the Node 24 above and this machine's
# bash and busybox with no registry access (scripts/build-sandbox-image.sh --dockerfile for node:24-slim);
# then the cluster runtime's, swarmd-sandbox-cluster:<content hash>: that image with the harness inside.
# The cluster image's tag is computed by swarmd's own code (tsx): installed first on a fresh clone.
sandbox-image: $(NODE_STAMP)
	scripts/build-sandbox-image.sh
	scripts/build-cluster-image.sh
