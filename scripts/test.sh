#!/usr/bin/env bash
# Set up and run every check: lint (ruff), types (mypy), the whole test suite (pytest) and,
# for a full run, the packages built, installed afresh and tested (scripts/test-wheels.sh).
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
if [[ $# -eq 0 ]]; then
  echo "== wheels"
  scripts/test-wheels.sh || { [[ $status -eq 0 ]] && status=1; }
fi
exit $status
