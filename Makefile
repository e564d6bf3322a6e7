# gpulease: everything a fresh machine needs is installed from these files.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STACK ?= aws-lora-7b

.PHONY: setup plan test lint schema vendor bench mutate clean

$(VENV)/.installed: requirements.txt requirements-dev.txt constraints.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt -c constraints.txt
	# The project itself, editable: the `gpulease` console script ($(VENV)/bin/gpulease); its dependencies are the
	# pinned ones above.
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $@

setup: $(VENV)/.installed
	@# The terminal-screen and shell-completion tests drive a real tmux and zsh; installed from Debian when missing
	@# (a test needing one fails in CI without it: tests/support/programs.py).
	@for p in tmux zsh; do command -v $$p >/dev/null 2>&1 || { if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		apt-get install -y -q $$p >/dev/null 2>&1 || echo "$$p could not be installed: the tests that drive it fail in CI"; \
	else echo "$$p is not installed: the tests that drive it are skipped (CI fails them)"; fi; }; done

## The main job, offline: review what an example stack would create (no credentials, no Pulumi CLI).
plan: setup
	$(VENV)/bin/gpulease plan $(STACK)

lint: setup
	$(VENV)/bin/ruff check .

test: setup lint
	$(PY) -m pytest -q -n auto

## Regenerate the checked-in JSON Schema of the stack config.
schema: setup
	$(PY) -m gpulease schema --write

## Regenerate what the publishable policy pack carries: policies/_vendor/ (a copy of gpulease/core and the
## provider SDKs' taggable resource types); tests/policies/test_publishable.py fails while it is stale.
vendor: setup
	$(PY) -m tools.vendor_pack

## Benchmarks (not part of the tests): plan review against its floor, plan start-up against the SDK import,
## the reaper against Cloud Custodian, the Alibaba Cloud sweep's API calls against the minimum, the pack started
## as the Pulumi CLI starts it against a bare pack, and ls/reap over ten regions against one.
bench: setup
	$(PY) bench/plan_bench.py
	$(PY) bench/plan_speed.py
	$(PY) bench/sweep_speed.py
	bash bench/reap_bench.sh
	$(PY) bench/alicloud_reap_bench.py
	$(PY) bench/pack_speed.py
	$(PY) bench/inventory_regions.py
	$(PY) bench/staging_speed.py

## Mutation check of the safety code (not part of CI): each listed edit must fail its tests; survivors are listed.
## One area: make mutate AREA=reaper (spec, loader, policy, prices, reaper, watchdog, bootstrap).
mutate: setup
	$(PY) -m tools.mutate $(if $(AREA),--area $(AREA))

clean:
	rm -rf $(VENV) bench/.venv .pytest_cache .ruff_cache
