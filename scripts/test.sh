#!/usr/bin/env bash
# Set up and run every check: lint (ruff), types (mypy) and the whole test suite (pytest).
# Extra arguments go to pytest, e.g. scripts/test.sh -k engine
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
echo "== ruff"
.venv/bin/ruff check .
echo "== mypy"
.venv/bin/mypy
echo "== pytest"
.venv/bin/python -m pytest -q "$@"
