#!/usr/bin/env bash
# Set up and run every check: lint (ruff), types (mypy), the whole test suite (pytest) and,
# for a full run, the packages built, installed afresh and tested (scripts/test-wheels.sh).
# Extra arguments go to pytest, e.g. scripts/test.sh -k engine
#
# scripts/test.sh --quick: ruff and the unit layers only (the rules engine, the built-in bots,
# the ratings, the referee and the import layers: no service, browser or sandbox is started),
# against the environment already set up (set up first if there is none). CI runs everything.
set -uo pipefail
cd "$(dirname "$0")/.."
QUICK_TESTS=(tests/test_layers.py tests/engine tests/bots tests/ratings tests/referee)
if [[ "${1:-}" == "--quick" ]]; then
  shift
  [[ -x .venv/bin/python ]] || scripts/setup.sh --test || { echo "setup failed" >&2; exit 2; }
  status=0
  echo "== ruff"
  .venv/bin/ruff check . || status=1
  echo "== pytest (unit layers)"
  .venv/bin/python -m pytest -q "${QUICK_TESTS[@]}" "$@" || status=$?
  exit $status
fi
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
