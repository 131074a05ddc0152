#!/usr/bin/env bash
# Regenerates the Python stubs of the Thousand Arena protocol (proto/thousand/v1).
#
# One copy, in the bot SDK, which needs nothing but grpcio and protobuf; the arena depends on
# the SDK and imports the same modules:
#   sdk/python/thousand_bot/proto/thousand/v1/   imported as thousand_bot.proto.thousand.v1
# It has type stubs (.pyi) from mypy-protobuf. JavaScript loads the .proto files at run time
# and needs no generated code.
#
# Usage: scripts/gen-proto.sh [OUTPUT_ROOT]   (default: the repository root)
# The stale-stub test generates into a temporary OUTPUT_ROOT and compares.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out_root="${1:-$repo}"
python="${PYTHON:-}"
if [[ -z "$python" ]]; then
  if [[ -x "$repo/.venv/bin/python" ]]; then python="$repo/.venv/bin/python"; else python="python3"; fi
fi
bindir="$(dirname "$("$python" -c 'import sys; print(sys.executable)')")"
mypy_plugin="$(command -v "$bindir/protoc-gen-mypy" || command -v protoc-gen-mypy)"
mypy_grpc_plugin="$(command -v "$bindir/protoc-gen-mypy_grpc" || command -v protoc-gen-mypy_grpc)"

generate() {
  local package="$1" dest="$2"
  local tmp
  tmp="$(mktemp -d)"
  "$python" -m grpc_tools.protoc -I "$repo/proto" \
    --python_out="$tmp" --grpc_python_out="$tmp" \
    --mypy_out="$tmp" --mypy_grpc_out="$tmp" \
    --plugin=protoc-gen-mypy="$mypy_plugin" \
    --plugin=protoc-gen-mypy_grpc="$mypy_grpc_plugin" \
    "$repo"/proto/thousand/v1/*.proto >/dev/null 2>"$tmp/protoc.log" \
    || { cat "$tmp/protoc.log" >&2; exit 1; }
  rm -f "$tmp/protoc.log"
  # Files without services get an empty *_grpc module: leave them out.
  for f in "$tmp"/thousand/v1/*_pb2_grpc.py; do
    if ! grep -q "Stub" "$f"; then rm -f "$f" "${f}i"; fi
  done
  # protoc writes imports relative to the proto root ("from thousand.v1 import ..."):
  # anchor them in the package that holds this copy.
  sed -i -E "s/^from thousand\.v1 import /from ${package}.thousand.v1 import /" \
    "$tmp"/thousand/v1/*.py "$tmp"/thousand/v1/*.pyi
  # The grpc package ships without type hints, so mypy cannot check the generated modules
  # against it; they are generated code, not ours to fix.
  for f in "$tmp"/thousand/v1/*.py "$tmp"/thousand/v1/*.pyi; do
    { printf '# mypy: ignore-errors\n'; cat "$f"; } >"$f.new" && mv "$f.new" "$f"
  done
  rm -rf "$dest/thousand"
  mkdir -p "$dest/thousand/v1"
  cp "$tmp"/thousand/v1/* "$dest/thousand/v1/"
  local doc='"""Generated from proto/thousand/v1 by scripts/gen-proto.sh; do not edit."""'
  for d in "$dest" "$dest/thousand" "$dest/thousand/v1"; do
    printf '%s\n' "$doc" >"$d/__init__.py"
  done
  rm -rf "$tmp"
}

generate thousand_bot.proto "$out_root/sdk/python/thousand_bot/proto"
