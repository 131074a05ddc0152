#!/usr/bin/env bash
# Set up and run the main job: a seeded game of built-in bots, told deal by deal.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null
exec .venv/bin/arena play --rules classic --seed 2026 "$@"
