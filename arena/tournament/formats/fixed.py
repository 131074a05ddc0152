"""Formats whose whole plan is known in advance: round robin, duplicate, gauntlet."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping

from arena.tournament.model import ResultRecord, ScheduledMatch
from arena.tournament.seating import MatchBuilder, all_seatings, seatings_for
from arena.tournament.spec import TournamentSpec


def _combos(n: int, k: int) -> list[tuple[int, ...]]:
    return list(itertools.combinations(range(n), k))


class FixedFormat:
    """A plan known in advance; played in one batch."""

    def __init__(self, plan: list[ScheduledMatch]) -> None:
        self.plan = plan

    def next_batch(self, done: Mapping[str, ResultRecord]) -> list[ScheduledMatch] | None:
        if all(m.match_id in done for m in self.plan):
            return None
        return self.plan

    def planned_total(self) -> int | None:
        return len(self.plan)


def round_robin(spec: TournamentSpec) -> list[ScheduledMatch]:
    """``games`` independent games over every seating of every group of participants.

    Game i takes group ``i mod C`` and that group's seat permutation ``(i div C) mod k!``,
    so a prefix of the plan already spreads the groups evenly; a multiple of ``C * k!``
    games is exactly balanced.
    """
    assert spec.games is not None
    k = spec.seats
    parts = spec.participants
    combos = _combos(len(parts), k)
    perms = all_seatings(k)
    b = MatchBuilder(spec)
    plan = []
    for i in range(spec.games):
        combo = combos[i % len(combos)]
        perm = perms[(i // len(combos)) % len(perms)]
        plan.append(b.single([parts[combo[j]] for j in perm]))
    return plan


def duplicate(spec: TournamentSpec) -> list[ScheduledMatch]:
    """``sets`` duplicate sets; set j seats the group of participants ``j mod C``."""
    assert spec.sets is not None
    k = spec.seats
    parts = spec.participants
    combos = _combos(len(parts), k)
    seatings = seatings_for(k, spec.format.seatings)
    b = MatchBuilder(spec)
    plan: list[ScheduledMatch] = []
    for j in range(spec.sets):
        table = [parts[i] for i in combos[j % len(combos)]]
        plan.extend(b.duplicate_set(table, seatings))
    return plan


def gauntlet(spec: TournamentSpec) -> list[ScheduledMatch]:
    """The candidate against each group of ``seats - 1`` pool opponents, in duplicate sets."""
    assert spec.sets is not None and spec.format.candidate is not None
    k = spec.seats
    cand = spec.participant(spec.format.candidate)
    pool = [p for p in spec.participants if p.name != cand.name]
    combos = _combos(len(pool), k - 1)
    seatings = seatings_for(k, spec.format.seatings)
    b = MatchBuilder(spec)
    plan: list[ScheduledMatch] = []
    for j in range(spec.sets):
        table = [cand, *(pool[i] for i in combos[j % len(combos)])]
        plan.extend(b.duplicate_set(table, seatings))
    return plan


def sets_needed(n_players: int, k: int) -> int:
    """Sets needed for every group of k players out of n to meet once."""
    return math.comb(n_players, k)
