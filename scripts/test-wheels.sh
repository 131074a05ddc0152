#!/usr/bin/env bash
# Build the wheels and sdists of thousand-bot and thousand-arena (python -m build), install
# the wheels into a fresh virtual environment, and run the SDK's tests against the installed
# packages rather than the checkout. scripts/test.sh runs it; it needs scripts/setup.sh --test.
#   scripts/test-wheels.sh [OUT_DIR]   (default: dist/ of the repository)
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"
out="${1:-$repo/dist}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
rm -rf "$out" && mkdir -p "$out"
echo "== build: thousand-bot, thousand-arena (wheel and sdist each) into $out"
.venv/bin/python -m build --outdir "$out" sdk/python >"$work/build-sdk.log" 2>&1 \
  || { tail -30 "$work/build-sdk.log"; exit 1; }
.venv/bin/python -m build --outdir "$out" . >"$work/build-arena.log" 2>&1 \
  || { tail -30 "$work/build-arena.log"; exit 1; }
ls "$out"
for kind in "thousand_bot-*.whl" "thousand_bot-*.tar.gz" "thousand_arena-*.whl" "thousand_arena-*.tar.gz"; do
  compgen -G "$out/$kind" >/dev/null || { echo "missing $kind" >&2; exit 1; }
done
echo "== install the wheels into a fresh virtual environment"
python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q --upgrade pip >/dev/null
# The SDK's wheel alone first: it must install and run with nothing but grpcio and protobuf.
"$work/venv/bin/python" -m pip install -q "$out"/thousand_bot-*.whl
"$work/venv/bin/thousand-bot" --version
"$work/venv/bin/python" -m pip freeze | grep -qi '^thousand-arena' && { echo "the SDK pulled in the arena" >&2; exit 1; }
# Then the arena's wheel, and what the SDK's tests need (they start a real gateway).
"$work/venv/bin/python" -m pip install -q "$out"/thousand_arena-*.whl \
  "pytest>=8" "pytest-timeout>=2.3" "hypothesis>=6.100"
# The wheel carries the compiled hot path (arena/compiled.py), not just its source.
version="$("$work/venv/bin/arena" --version)"
echo "$version"
[[ "$version" == *"compiled with mypyc"* ]] || { echo "the arena's wheel is not compiled" >&2; exit 1; }
echo "== the SDK's tests against the installed packages"
ARENA_TEST_INSTALLED=1 "$work/venv/bin/pytest" -q -p no:cacheprovider tests/sdk
