#!/usr/bin/env bash
# Set up and run the main job: Redis, the gateway and the built-in bots as remote SDK bots,
# a seeded duplicate round robin through them, the leaderboard, the report and the replays.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null
exec .venv/bin/arena demo "$@"
