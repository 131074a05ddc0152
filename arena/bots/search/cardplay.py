"""Card play by determinized search (perfect-information Monte Carlo).

For each candidate card the search draws worlds consistent with what the seat knows
(:mod:`.belief`), plays the card in every world and finishes the deal: with the exact
solver once few cards are left, else with a rollout of the default policy.  Every
candidate is tried in the same worlds, so the comparison between two cards does not
depend on the luck of the draw.  The card with the best mean value of the outcome (the
rules' scoring, :class:`~.scoring.Evaluator`) is played.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from .belief import Knowledge
from .lean import LeanRules, PlayState
from .rollout import fast_playout, remaining_plays, solve
from .scoring import Evaluator


@dataclass
class Budget:
    """When to stop: a clock deadline (``perf_counter`` seconds) and/or an iteration count.

    With ``iterations`` set the search is deterministic for a given seed; the deadline
    then only guards against an unexpectedly slow machine.
    """

    deadline: float
    iterations: int | None
    clock: Callable[[], float]

    def done(self, count: int, least: int = 1) -> bool:
        if count < least:
            return False
        if self.iterations is not None and count >= self.iterations:
            return True
        return self.clock() >= self.deadline

    def expired(self) -> bool:
        return self.clock() >= self.deadline


@dataclass
class PlaySearch:
    lr: LeanRules
    costs: list[int]
    evaluator: Evaluator
    team: tuple[int, ...] | None
    maximizers: tuple[int, ...]
    #: Use the exact solver when at most this many cards are left in all hands.
    solve_limit: int

    def value_after(self, base: PlayState, move: int, hidden: int) -> float:
        s = base.copy()
        s.apply(move)
        ev = self.evaluator
        if remaining_plays(s) <= self.solve_limit:
            return solve(s, self.maximizers, lambda x: ev.played(x.raw_points(), x.tricks))
        fast_playout(s, self.costs, self.team, hidden)
        return ev.played(s.raw_points(), s.tricks)


def search_play(
    search: PlaySearch,
    moves: list[int],
    worlds: Callable[[random.Random], tuple[PlayState, int] | None],
    rng: random.Random,
    budget: Budget,
) -> tuple[int, list[float], int]:
    """The best move, each move's mean value and the number of worlds searched."""
    totals = [0.0] * len(moves)
    count = 0
    while not budget.done(count):
        w = worlds(rng)
        if w is None:
            break
        base, hidden = w
        values = []
        for m in moves:
            if count and budget.expired():
                break
            values.append(search.value_after(base, m, hidden))
        if len(values) < len(moves):
            break  # out of time inside this world: it is left out
        for i, v in enumerate(values):
            totals[i] += v
        count += 1
    if not count:
        return moves[0], totals, 0
    means = [t / count for t in totals]
    best = max(range(len(moves)), key=lambda i: (means[i], -i))
    return moves[best], means, count


__all__ = ["Budget", "Knowledge", "PlaySearch", "search_play"]
