"""The Swiss format: rounds of tables formed by score."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from arena.tournament.model import ResultRecord, ScheduledMatch
from arena.tournament.seating import MatchBuilder, seatings_for
from arena.tournament.spec import TournamentSpec


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
