"""The open-ended league: every round pairs the current participants by live rating.

Replayed from the results store on every step (each round's plan is saved before it is
played), so a stopped run resumes where it was and the same results lead to the same
pairings.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from arena.ratings import GameResult, LiveLeague
from arena.tournament.model import ResultRecord, ScheduledMatch
from arena.tournament.seating import MatchBuilder, seatings_for
from arena.tournament.spec import Participant, SpecError, TournamentSpec, load_spec
from arena.tournament.store import ResultStore

log = logging.getLogger(__name__)


RoundPlans = Callable[[int], list[ScheduledMatch] | None]


class PlanMemory:
    """Where a league keeps the plan of each round, so a resumed round is the same round."""

    def get(self, rnd: int) -> list[ScheduledMatch] | None:
        raise NotImplementedError

    def put(self, rnd: int, plan: Sequence[ScheduledMatch]) -> list[ScheduledMatch]:
        """Save unless a plan exists; return the plan that is now saved."""
        raise NotImplementedError


class MemoryPlans(PlanMemory):
    def __init__(self) -> None:
        self._plans: dict[int, list[ScheduledMatch]] = {}

    def get(self, rnd: int) -> list[ScheduledMatch] | None:
        return self._plans.get(rnd)

    def put(self, rnd: int, plan: Sequence[ScheduledMatch]) -> list[ScheduledMatch]:
        return self._plans.setdefault(rnd, list(plan))


class StorePlans(PlanMemory):
    """Round plans kept in the results store next to the results they lead to."""

    def __init__(self, store: ResultStore, tournament: str) -> None:
        self.store = store
        self.tournament = tournament

    def get(self, rnd: int) -> list[ScheduledMatch] | None:
        plan = self.store.get_round_plan(self.tournament, rnd)
        return None if plan is None else [ScheduledMatch.from_json(m) for m in plan]

    def put(self, rnd: int, plan: Sequence[ScheduledMatch]) -> list[ScheduledMatch]:
        saved = self.store.put_round_plan(self.tournament, rnd, [m.to_json() for m in plan])
        return [ScheduledMatch.from_json(m) for m in saved]


class LeagueFormat:
    """An open-ended league: every round pairs the current participants by live rating.

    Participants are read again from the spec file before each new round, so adding a
    bot to the file makes it join at the next round (a file that no longer validates is
    reported and the previous list kept).  Pairing sorts the players by a draw from their
    openskill belief (``mu + sigma * z``, z from a seeded hash): close ratings meet, and a
    newcomer's wide belief moves it around the table until its rating settles.  When the
    field does not divide into tables, the players with the most games sit out.  Each
    round's plan is saved before it is played, so a stopped round resumes unchanged even
    if bots joined meanwhile.
    """

    def __init__(
        self,
        spec: TournamentSpec,
        plans: PlanMemory | None = None,
        reload: Callable[[], Sequence[Participant]] | None = None,
        pin: Callable[[Sequence[Participant]], list[Participant]] | None = None,
    ) -> None:
        assert spec.sets is not None
        self.spec = spec
        self.rounds = spec.format.rounds
        self.seatings = seatings_for(spec.seats, spec.format.seatings)
        self.plans = plans or MemoryPlans()
        self.reload = reload or self._reload_from_file
        #: Pins the hosted participants of each round to their latest passing version.
        self.pin = pin
        self.participants: list[Participant] = list(spec.participants)
        self.league = LiveLeague(seats=spec.seats)
        self._plan_sizes: list[int] = []

    def planned_total(self) -> int | None:
        return None

    def per_round(self, participants: int | None = None) -> int:
        """Matches a round plays with ``participants`` (default: the current list)."""
        n = len(self.participants) if participants is None else participants
        return (n // self.spec.seats) * (self.spec.sets or 1) * len(self.seatings)

    def max_total(self) -> int | None:
        """The matches a league of fixed rounds will play, as far as it can be told now:
        the rounds planned so far, and the rest at the current number of participants
        (bots joining later make it grow). None for a league without an end."""
        if self.rounds is None:
            return None
        planned = self._planned_rounds()
        return sum(planned) + max(0, self.rounds - len(planned)) * self.per_round()

    def _planned_rounds(self) -> list[int]:
        """Matches of each round planned so far (a saved plan never changes)."""
        sizes = self._plan_sizes
        while self.rounds is not None and len(sizes) < self.rounds:
            plan = self.plans.get(len(sizes))
            if plan is None:
                break
            sizes.append(len(plan))
        return sizes

    def _reload_from_file(self) -> Sequence[Participant]:
        if not self.spec.source:
            return self.participants
        try:
            fresh = load_spec(self.spec.source)
        except SpecError as exc:
            log.warning(
                "league spec not reloaded, keeping %d participants: %s", len(self.participants), exc
            )
            return self.participants
        if fresh.secret_seed != self.spec.secret_seed:
            # A remote bot joining a league dealt from a public seed could derive its deals.
            log.warning(
                "league spec not reloaded, keeping %d participants: the new participants "
                "would change how the deals are seeded (a league keeps the seed it started "
                "with; start one with public_seed: false to let remote bots join later)",
                len(self.participants),
            )
            return self.participants
        return fresh.participants

    def next_batch(self, done: Mapping[str, ResultRecord]) -> list[ScheduledMatch] | None:
        league = LiveLeague(seats=self.spec.seats)
        next_index = 0
        next_set = 0
        rnd = 0
        while self.rounds is None or rnd < self.rounds:
            plan = self.plans.get(rnd)
            if plan is None:
                self.participants = list(self.reload())
                if self.pin is not None:
                    self.participants = self.pin(self.participants)
                fresh = self.pair(rnd, league, next_index, next_set)
                if not fresh:
                    self.league = league
                    return []  # not enough players yet: the scheduler waits and asks again
                plan = self.plans.put(rnd, fresh)
            if not all(m.match_id in done for m in plan):
                self.league = league
                return plan
            for m in plan:
                rec = done[m.match_id]
                n = len(rec.players)
                luck = ([sum(rec.seat_luck(a, b) for b in range(n)) for a in range(n)]
                        if self.spec.luck_adjusted else None)
                league.update(
                    GameResult(tuple(rec.players), tuple(rec.scores), tuple(rec.ranks), rec.group),
                    luck,
                )
            next_index = max(m.index for m in plan) + 1
            next_set += len({m.group for m in plan})
            rnd += 1
        self.league = league
        return None

    def pair(
        self, rnd: int, league: LiveLeague, next_index: int, next_set: int
    ) -> list[ScheduledMatch]:
        k = self.spec.seats
        players = self.participants
        if len(players) < k:
            return []
        order_hash = {p.name: self.spec.derive(f"league/{rnd}/{p.name}") for p in players}
        n_out = len(players) % k
        if n_out:
            busiest = sorted(
                players, key=lambda p: (-league.rating(p.name).games, order_hash[p.name])
            )
            sitting = {p.name for p in busiest[:n_out]}
            players = [p for p in players if p.name not in sitting]
        rng = np.random.default_rng(int(self.spec.derive(f"league/{rnd}")[:16], 16))
        draws = rng.standard_normal(len(players))
        keyed = []
        for p, z in zip(players, draws, strict=True):
            r = league.rating(p.name)
            keyed.append((-(r.mu + r.sigma * float(z)), order_hash[p.name], p))
        ranked = [p for _, _, p in sorted(keyed, key=lambda t: (t[0], t[1]))]
        b = MatchBuilder(self.spec, next_index=next_index, next_set=next_set)
        plan: list[ScheduledMatch] = []
        for t in range(0, len(ranked), k):
            table = ranked[t : t + k]
            for _ in range(self.spec.sets or 1):
                plan.extend(b.duplicate_set(table, self.seatings, rnd))
        return plan
