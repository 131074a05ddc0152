#!/usr/bin/env bash
# Set up and run every check: lint (ruff), types (mypy) and the whole test suite (pytest).
# Extra arguments go to pytest, e.g. scripts/test.sh -k engine
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test || { echo "setup failed" >&2; exit 2; }
status=0
echo "== ruff"
.venv/bin/ruff check . || status=1
echo "== mypy"
.venv/bin/mypy || status=1
echo "== pytest"
.venv/bin/python -m pytest -q "$@" || status=$?
exit $status
