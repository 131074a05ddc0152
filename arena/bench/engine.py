"""Engine benchmark: random legal play in one process.

A deal counts from the deal (chance step) through the auction, talon, exchange, play and
scoring, with the legal actions listed at every decision, as a bot or a referee would.
"""

from __future__ import annotations

import random
import time
from typing import Any

from ..engine import Game, Rules


def bench_engine(preset: str = "classic", seconds: float = 3.0, max_deals: int = 50,
                 seed: str = "bench") -> dict[str, Any]:
    """Play random games for about ``seconds`` and report deals/s, games/s, copy cost."""
    rules = Rules.preset(preset, max_deals=max_deals)
    rng = random.Random(seed)
    deals = games = decisions = 0
    start = time.perf_counter()
    deadline = start + seconds
    sample: Game | None = None
    k = 0
    while time.perf_counter() < deadline:
        game = Game(rules, seed=f"{seed}/{k}")
        k += 1
        while not game.is_over:
            if game.is_chance:
                game.deal()
                continue
            legal = game.legal_actions()
            game.apply(legal[int(rng.random() * len(legal))])
            decisions += 1
            if sample is None and game.phase_name == "play" and game.deals_played == 3:
                sample = game.copy()
        deals += game.deals_played
        games += 1
    elapsed = time.perf_counter() - start
    copy_us = _copy_cost(sample) if sample is not None else float("nan")
    return {
        "preset": preset,
        "seconds": round(elapsed, 3),
        "games": games,
        "deals": deals,
        "decisions": decisions,
        "deals_per_s": round(deals / elapsed, 1),
        "games_per_s": round(games / elapsed, 2),
        "decisions_per_s": round(decisions / elapsed, 1),
        "max_deals_per_game": max_deals,
        "copy_us": round(copy_us, 2),
    }


def _copy_cost(game: Game, n: int = 20000) -> float:
    t = time.perf_counter()
    for _ in range(n):
        game.copy()
    return (time.perf_counter() - t) / n * 1e6
