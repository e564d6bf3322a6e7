#!/usr/bin/env bash
# The reaper benchmark: Cloud Custodian goes into bench/.venv (never the project venv), then the bench runs with
# the project's venv, which holds moto's server. Extra arguments go to reap_bench.py (e.g. --repeat 3).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  echo "the project venv is missing: run 'make setup' first" >&2
  exit 2
fi
if [ ! -x bench/.venv/bin/custodian ] || [ bench/requirements.txt -nt bench/.venv/.installed ]; then
  python3 -m venv bench/.venv
  bench/.venv/bin/python -m pip install --quiet --upgrade pip
  bench/.venv/bin/python -m pip install --quiet -r bench/requirements.txt
  touch bench/.venv/.installed
fi
exec .venv/bin/python bench/reap_bench.py "$@"
