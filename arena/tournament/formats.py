"""Tournament formats: how participants meet, as a deterministic list of matches.

Every format is driven the same way: the scheduler asks ``next_batch(done)`` with the
results stored so far and plays what it gets until the format answers ``None``.  Fixed
formats (round robin, duplicate, gauntlet) return their whole plan at once; adaptive ones
(Swiss, SPRT, league) return one round at a time and recompute earlier rounds from the
stored results, so a stopped tournament resumes exactly where it was and a re-run with
the same seed asks for the same matches.

Match ids and seeds come from :meth:`TournamentSpec.match_id` and
:meth:`TournamentSpec.derive`: the seed of duplicate set K is ``derive("set/K")``, so the
games of one set share their deals and every bot holds every hand; an independent game I
has ``derive("game/I")``.  With a secret seed each match also carries its commitment.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from arena.tournament.adaptive import LeagueFormat, SprtFormat, StorePlans
from arena.tournament.model import ResultRecord, ScheduledMatch
from arena.tournament.seating import MatchBuilder, all_seatings, seatings_for
from arena.tournament.spec import TournamentSpec

if TYPE_CHECKING:
    from arena.tournament.store import ResultStore

class Format(Protocol):
    """What the scheduler needs from a format."""

    def next_batch(self, done: Mapping[str, ResultRecord]) -> list[ScheduledMatch] | None:
        """Matches to play next (some may already be done), or None when finished."""
        ...

    def planned_total(self) -> int | None:
        """Number of matches the format will play, when known in advance."""
        ...


def _combos(n: int, k: int) -> list[tuple[int, ...]]:
    return list(itertools.combinations(range(n), k))


# ---------------------------------------------------------------------------------------
# Fixed formats


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


# ---------------------------------------------------------------------------------------
# Swiss


def rank_points(ranks: Sequence[int]) -> list[float]:
    """Points for finishing places: first 1, last 0, linear between; equal ranks share."""
    k = len(ranks)
    if k <= 1:
        return [1.0] * k
    return [(k - r) / (k - 1) for r in ranks]


@dataclass
class _Standing:
    score: float = 0.0
    games: int = 0
    byes: int = 0
    met: dict[str, int] = field(default_factory=lambda: defaultdict(int))


class SwissFormat:
    """Rounds of tables formed by score; each table plays ``sets`` duplicate sets.

    Players are ordered by score, then Buchholz (the sum of the scores of everyone they
    met), then a value derived from the seed for (round, name): the order is total and needs
    no RNG.  Each
    table is filled from the top of that order, preferring players who met the ones
    already seated least often.  When the field does not divide into tables, the lowest
    players with the fewest byes sit out and score half a point per game they missed.
    """

    def __init__(self, spec: TournamentSpec) -> None:
        assert spec.format.rounds is not None and spec.sets is not None
        self.spec = spec
        self.rounds = spec.format.rounds
        self.seatings = seatings_for(spec.seats, spec.format.seatings)

    def planned_total(self) -> int | None:
        tables = len(self.spec.participants) // self.spec.seats
        assert self.spec.sets is not None
        return self.rounds * tables * self.spec.sets * len(self.seatings)

    def next_batch(self, done: Mapping[str, ResultRecord]) -> list[ScheduledMatch] | None:
        b = MatchBuilder(self.spec)
        st = {p.name: _Standing() for p in self.spec.participants}
        for rnd in range(self.rounds):
            batch, byes = self.pair(b, rnd, st)
            if not all(m.match_id in done for m in batch):
                return batch
            games_per_player = (self.spec.sets or 1) * len(self.seatings)
            for name in byes:
                st[name].byes += 1
                st[name].score += 0.5 * games_per_player
            for m in batch:
                rec = done[m.match_id]
                for name, pts in zip(rec.players, rank_points(rec.ranks), strict=True):
                    st[name].score += pts
                    st[name].games += 1
                    for other in rec.players:
                        if other != name:
                            st[name].met[other] += 1
        return None

    def order(self, rnd: int, st: Mapping[str, _Standing]) -> list[str]:
        def buchholz(name: str) -> float:
            return sum(st[o].score * c for o, c in st[name].met.items())

        names = [p.name for p in self.spec.participants]
        return sorted(
            names,
            key=lambda n: (
                -st[n].score,
                -buchholz(n),
                self.spec.derive(f"swiss/{rnd}/{n}"),
            ),
        )

    def pair(
        self, b: MatchBuilder, rnd: int, st: Mapping[str, _Standing]
    ) -> tuple[list[ScheduledMatch], list[str]]:
        k = self.spec.seats
        order = self.order(rnd, st)
        n_bye = len(order) % k
        byes: list[str] = []
        if n_bye:
            fewest = sorted(range(len(order)), key=lambda i: (st[order[i]].byes, -i))[:n_bye]
            byes = [order[i] for i in sorted(fewest)]
        remaining = [n for n in order if n not in byes]
        tables: list[list[str]] = []
        while remaining:
            table = [remaining.pop(0)]
            while len(table) < k:
                best = min(
                    range(len(remaining)),
                    key=lambda i: (sum(st[remaining[i]].met.get(t, 0) for t in table), i),
                )
                table.append(remaining.pop(best))
            tables.append(table)
        batch: list[ScheduledMatch] = []
        for table in tables:
            members = [self.spec.participant(n) for n in table]
            for _ in range(self.spec.sets or 1):
                batch.extend(b.duplicate_set(members, self.seatings, rnd))
        return batch, byes


# ---------------------------------------------------------------------------------------
# Entry point


FormatFactory = Callable[[TournamentSpec], Format]


def make_format(spec: TournamentSpec, store: ResultStore | None = None) -> Format:
    """The format object for a validated spec; a league keeps its round plans in ``store``."""
    t = spec.format.type
    if t == "round-robin":
        return FixedFormat(round_robin(spec))
    if t == "duplicate":
        return FixedFormat(duplicate(spec))
    if t == "gauntlet":
        return FixedFormat(gauntlet(spec))
    if t == "swiss":
        return SwissFormat(spec)
    if t == "sprt":
        return SprtFormat(spec)
    if t == "league":
        pin = None
        if store is not None and spec.has_hosted:
            from arena.hosted.specs import league_pin

            pin = league_pin(store)
        return LeagueFormat(spec, StorePlans(store, spec.name) if store is not None else None,
                            pin=pin)
    raise ValueError(f"unknown format {t!r}")


def expand(spec: TournamentSpec) -> list[ScheduledMatch]:
    """The full plan of a fixed format, or the first round of an adaptive one."""
    batch = make_format(spec).next_batch({})
    return batch or []


def sets_needed(n_players: int, k: int) -> int:
    """Sets needed for every group of k players out of n to meet once."""
    return math.comb(n_players, k)
