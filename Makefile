# PGLimits — run `make help` for the targets.
SHELL := /bin/bash
PY := .venv/bin/python
PROFILE ?= quick
PYTEST_ARGS ?=
ONLY ?=
SERVERS ?=
only_args = $(foreach w,$(ONLY),--only $(w))

.DEFAULT_GOAL := help
.PHONY: help setup study results figures report datasets test unit lint lab servers-down clean

help: ## list the targets
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  \033[1m%-13s\033[0m %s\n", $$1, $$2}'

setup: ## install everything missing (apt, pip, server binaries); idempotent
	@bash scripts/setup.sh

study: setup ## run the study end to end for PROFILE (default quick); ONLY="pubsub" runs one section (add RESUME=1 to go on)
	$(PY) run_all.py --profile $(PROFILE) $(only_args) $(if $(RESUME),--resume)

results: setup ## after `make study PROFILE=full`: copy its run summaries and executed notebooks into data/results/<host-id>/full/ (ONLY="pubsub": that section's alone) and regenerate docs/RESULTS.md, the decision matrix, the README answer and the report
	.venv/bin/pglimits results export --profile full $(only_args)

figures: setup ## regenerate every committed figure and table from the committed runs (data/results/<host>/full/runs); README and docs untouched
	.venv/bin/pglimits results figures --profile full

report: setup ## open the committed report (data/results/<host>/full/report.html) in a browser, or print where it is
	.venv/bin/pglimits results open --profile full

datasets: setup ## build PROFILE's seeded corpus and vectors with exact ground truth (data/datasets/, reused when built)
	.venv/bin/pglimits datasets build --profile $(PROFILE)

test: setup ## run every test: unit, integration (real servers), notebooks
	$(PY) -m pglimits_core.servers.ownership
	$(PY) -m pytest $(PYTEST_ARGS)

unit: setup ## run only the unit tests (no servers)
	$(PY) -m pytest tests/unit $(PYTEST_ARGS)

lint: setup ## ruff over the package and tests
	.venv/bin/ruff check pglimits_core tests run_all.py

lab: setup ## JupyterLab on the notebooks: they show the committed results, no server needed; SERVERS=1 also starts PROFILE's servers (to measure), stopped when you quit it
	$(if $(SERVERS),servers=$$($(PY) -m pglimits_core.studies.study $(PROFILE)) && .venv/bin/pglimits servers up --detach $$servers)
	$(if $(SERVERS),trap '.venv/bin/pglimits servers down' EXIT;) .venv/bin/jupyter lab --ip 127.0.0.1 --notebook-dir notebooks $$([ "$$(id -u)" = 0 ] && echo --allow-root)

servers-down: ## stop servers left by `pglimits servers up --detach`
	-.venv/bin/pglimits servers down

clean: servers-down ## remove server data, generated datasets, raw runs and executed notebooks
	rm -rf .pglimits data/datasets data/runs data/superseded-runs data/executed data/scratch
