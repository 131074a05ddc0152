"""Engine benchmark: random legal play in one process.

A deal counts from the deal (chance step) through the auction, talon, exchange, play and
scoring, with the legal actions listed at every decision, as a bot or a referee would.
"""

from __future__ import annotations

import random
import time
from typing import Any

from ..engine import Game, Rules
from ..engine.actions import CONCEDE_ACTION


def bench_engine(preset: str = "classic", seconds: float = 3.0, max_deals: int = 50,
                 seed: str = "bench", play_out: bool = False) -> dict[str, Any]:
    """Play random games for about ``seconds`` and report deals/s, games/s, copy cost.

    With ``play_out`` the random player never concedes, so every deal is played to the
    last trick (the dearest kind of deal).
    """
    rules = Rules.preset(preset, max_deals=max_deals)
    rng = random.Random(seed)
    deals = games = decisions = played_out = 0
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
            if play_out and legal[-1] is CONCEDE_ACTION:
                legal.pop()
            elif play_out and legal[0] is CONCEDE_ACTION:
                legal.pop(0)
            game.apply(legal[int(rng.random() * len(legal))])
            decisions += 1
            if sample is None and game.phase_name == "play" and game.deals_played == 3:
                sample = game.copy()
        deals += game.deals_played
        played_out += sum(1 for rec in game.records if rec.result and "points" in rec.result)
        games += 1
    elapsed = time.perf_counter() - start
    copy_us = _copy_cost(sample) if sample is not None else float("nan")
    return {
        "preset": preset,
        "play_out": play_out,
        "seconds": round(elapsed, 3),
        "games": games,
        "deals": deals,
        "decisions": decisions,
        "deals_per_s": round(deals / elapsed, 1),
        "games_per_s": round(games / elapsed, 2),
        "decisions_per_s": round(decisions / elapsed, 1),
        # Random play concedes some deals after the talon; the rest are played to the end.
        "played_out_share": round(played_out / deals, 3) if deals else 0.0,
        "max_deals_per_game": max_deals,
        "copy_us": round(copy_us, 2),
    }


def _copy_cost(game: Game, n: int = 20000) -> float:
    t = time.perf_counter()
    for _ in range(n):
        game.copy()
    return (time.perf_counter() - t) / n * 1e6
