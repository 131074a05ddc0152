"""Card play by determinized search (perfect-information Monte Carlo).

For each candidate card the search draws worlds consistent with what the seat knows
(:mod:`.belief`), plays the card in every world and finishes the deal: with the exact
solver once few cards are left, else with a rollout of the default policy.  Every
candidate is tried in the same worlds, so the comparison between two cards does not
depend on the luck of the draw.  The card with the best mean value of the outcome (the
rules' scoring, :class:`~.scoring.Evaluator`) is played.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass

from .belief import Knowledge
from .lean import LeanRules, PlayState
from .rollout import Guard, OutOfTime, fast_playout, remaining_plays, solve
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

    guard: Guard | None = None

    def value_after(self, base: PlayState, move: int, hidden: int) -> float:
        s = base.copy()
        s.apply(move)
        ev = self.evaluator
        if remaining_plays(s) <= self.solve_limit:
            return solve(s, self.maximizers, lambda x: ev.played(x.raw_points(), x.tricks),
                         guard=self.guard)
        fast_playout(s, self.costs, self.team, hidden)
        return ev.played(s.raw_points(), s.tricks)


#: Worlds searched before the search may stop early, and how often it checks.
EARLY_MIN_WORLDS = 12
EARLY_EVERY = 4
#: A move counts as surely better than another when its lead over it, world by world,
#: is this many standard errors above zero.
EARLY_Z = 3.0
#: Differences smaller than this many points (at the upper end) do not matter.
NEGLIGIBLE = 1.0


def settled(values: list[list[float]]) -> bool:
    """Whether the best move is ahead of every other beyond doubt, on the worlds so far.

    Every move was tried in the same worlds, so the comparison is paired: the lead of the
    best move over another, world by world, has a mean and a standard error.  The search
    may stop when each lead is clearly positive or too small to matter either way.  The
    rule depends only on the values, never on the clock, so it keeps searches with a
    fixed number of iterations reproducible.
    """
    count = len(values[0])
    if len(values) < 2 or count < EARLY_MIN_WORLDS:
        return False
    means = [math.fsum(v) / count for v in values]
    best = max(range(len(values)), key=lambda i: (means[i], -i))
    vb = values[best]
    for j, vj in enumerate(values):
        if j == best:
            continue
        diffs = [a - b for a, b in zip(vb, vj, strict=True)]
        md = means[best] - means[j]
        var = math.fsum((d - md) ** 2 for d in diffs) / (count - 1)
        se = math.sqrt(var / count)
        if not (md - EARLY_Z * se > 0 or md + EARLY_Z * se < NEGLIGIBLE):
            return False
    return True


def search_play(
    search: PlaySearch,
    moves: list[int],
    worlds: Callable[[random.Random], tuple[PlayState, int] | None],
    rng: random.Random,
    budget: Budget,
    early_stop: bool = True,
) -> tuple[int, list[float], int]:
    """The best move, each move's mean value and the number of worlds searched."""
    values: list[list[float]] = [[] for _ in moves]
    count = 0
    search.guard = Guard(budget.clock, budget.deadline)
    while not budget.done(count):
        w = worlds(rng)
        if w is None:
            break
        base, hidden = w
        got = []
        try:
            for m in moves:
                if count and budget.expired():
                    break
                got.append(search.value_after(base, m, hidden))
        except OutOfTime:
            break  # the partial world is left out (with none finished, the bot falls back)
        if len(got) < len(moves):
            break  # out of time inside this world: it is left out
        for i, v in enumerate(got):
            values[i].append(v)
        count += 1
        if early_stop and count % EARLY_EVERY == 0 and settled(values):
            break
    if not count:
        return moves[0], [0.0] * len(moves), 0
    means = [math.fsum(v) / count for v in values]
    best = max(range(len(moves)), key=lambda i: (means[i], -i))
    return moves[best], means, count


__all__ = ["Budget", "Knowledge", "PlaySearch", "search_play"]
