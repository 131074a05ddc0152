"""Write the engine's golden files in ``tests/golden``.

* ``replay-<config>.json``: a seeded game of random legal play for every preset (and a
  classic game with many house options), as a replay file.  ``arena replay verify`` must
  accept each one: a change to the engine that alters any deal shows up here.
* ``legal-counts.json``: for a scripted game per preset, the number of legal actions at
  every step and the action taken (like a chess engine's perft counts).
* ``replay-<config>-old-defaults.json``: where a preset's defaults changed (to follow a
  rule text) and its scripted game changed with them, the game as the earlier defaults
  played it, from the same seed, with those values written into its rules
  (:func:`arena.engine.rules.earlier_defaults`): old replays keep verifying.

Every choice is derived from SHA-256 of a text, so the files can be reproduced in any
language from the seeds alone.  Regenerate after a deliberate rule change with::

    .venv/bin/python tests/engine/make_golden.py          # rewrite the files
    .venv/bin/python tests/engine/make_golden.py --check  # exit 1 if a file would change
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from arena.engine import PRESETS, Game, Rules
from arena.engine import replay as rp
from arena.engine.rules import earlier_defaults

GOLDEN = Path(__file__).resolve().parents[1] / "golden"

#: name -> (preset, options).  max_deals keeps random games short.
CONFIGS: dict[str, tuple[str, dict[str, Any]]] = {
    **{name: (name, {"max_deals": 6}) for name in PRESETS},
    "classic-house": ("classic", {
        "max_deals": 8, "half_marriage": True, "ace_marriage": 200, "nines_marriage": 360,
        "marriage_needs_trick": False, "rebuy": True, "blind_bid": True,
        "blind_hides_talon": True, "four_nines": "redeal-after-exchange",
        "golden_round": True, "dump_truck": "555-and-minus", "virgin_bonus": 10,
        "concede_opponents": "half", "bolt_on": "no-points",
    }),
}

#: Configurations whose scripted game the earlier defaults played differently.
OLD_DEFAULTS = ["estonian", "estonian-800", "classic-501", "classic-house"]
#: name -> the configuration and seed it is the earlier-defaults game of.
SEEDS: dict[str, str] = {}
for _name in OLD_DEFAULTS:
    _preset, _options = CONFIGS[_name]
    CONFIGS[f"{_name}-old-defaults"] = (_preset, {**_options, **earlier_defaults(_preset)})
    SEEDS[f"{_name}-old-defaults"] = f"golden/{_name}"

#: Configurations of the legal-count file (3 deals each).
COUNT_CONFIGS = [*PRESETS, "classic-house", *(f"{n}-old-defaults" for n in OLD_DEFAULTS)]


def seed_of(name: str) -> str:
    return SEEDS.get(name, f"golden/{name}")


def choose(seed: str, step: int, n: int) -> int:
    """The index of the action taken at ``step``: SHA-256 of ``seed/step`` modulo n."""
    digest = hashlib.sha256(f"{seed}/{step}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % n


def play(name: str, max_deals: int | None = None) -> tuple[Game, list[int], list[str]]:
    """Play the scripted game of configuration ``name``; returns the game, the number of
    legal actions at each decision and the action taken."""
    preset, options = CONFIGS[name]
    if max_deals is not None:
        options = {**options, "max_deals": max_deals}
    rules = Rules.preset(preset, **options)
    return play_game(Game(rules, seed=seed_of(name)))


def play_game(game: Game) -> tuple[Game, list[int], list[str]]:
    """Play ``game`` to its end with the scripted choices of its seed."""
    seed = game.seed
    counts: list[int] = []
    taken: list[str] = []
    while not game.is_over:
        if game.is_chance:
            game.deal()
            continue
        legal = game.legal_actions()
        action = legal[choose(seed, len(counts), len(legal))]
        counts.append(len(legal))
        taken.append(str(action))
        game.apply(action)
        if len(counts) > 100_000:
            raise RuntimeError(f"{seed}: the scripted game does not end")
    return game, counts, taken


def replay_for(name: str) -> dict[str, Any]:
    game, _, _ = play(name)
    data = rp.replay_from_game(game, [f"script-{k}" for k in range(game.rules.players)])
    data["engine_version"] = "golden"  # the files must not change with the version number
    return data


def counts_document() -> dict[str, Any]:
    games = []
    for name in COUNT_CONFIGS:
        game, counts, taken = play(name, max_deals=3)
        preset, options = CONFIGS[name]
        games.append({
            "name": name,
            "rules": Rules.preset(preset, **{**options, "max_deals": 3}).to_json(),
            "seed": seed_of(name),
            "choice": "index = int(SHA-256(seed + '/' + step)[:8], big-endian) % count",
            "counts": counts,
            "actions": taken,
            "scores": game.scores,
        })
    return {"format": "thousand-legal-counts", "format_version": 1, "games": games}


def expected_files() -> dict[Path, str]:
    out = {GOLDEN / f"replay-{name}.json": json.dumps(replay_for(name), indent=1) + "\n"
           for name in CONFIGS}
    out[GOLDEN / "legal-counts.json"] = json.dumps(counts_document(), indent=1) + "\n"
    return out


def main(argv: list[str]) -> int:
    check = "--check" in argv
    files = expected_files()
    changed = [p for p, text in files.items()
               if not p.exists() or p.read_text(encoding="utf-8") != text]
    if check:
        for p in changed:
            print(f"would change: {p.relative_to(GOLDEN.parent.parent)}")
        return 1 if changed else 0
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for p in changed:
        p.write_text(files[p], encoding="utf-8")
        print(f"wrote {p.relative_to(GOLDEN.parent.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
