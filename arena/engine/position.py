"""A position of the play phase with every hand known, for searches that play deals out.

:class:`PlayState` runs the engine's own trick rules (:class:`~arena.engine.tricks.TrickPlay`)
without the rest of a :class:`~arena.engine.Game`: no action objects, no event log, no
observations, only what the tricks need.  The search bot samples worlds into such
positions and plays them out by the thousand; compiled with the engine, its moves cost
native speed.
"""

from __future__ import annotations

from .cards import cards_of
from .copies import copy_tricks
from .tricks import TrickPlay, TrickRules


class PlayState(TrickPlay):
    """A position of the play phase with every hand known, as searches play deals out.

    ``extra_last`` are the points the taker of the last trick adds (a bank, a spare
    talon) and ``extra_declarer`` those the declarer adds (its discards), as the engine
    scores them.
    """

    __slots__ = ("extra_declarer", "extra_last", "to_act")

    to_act: int
    extra_last: int
    extra_declarer: int

    @staticmethod
    def new(tr: TrickRules, active: list[int], n: int, hands: list[int], leader: int,
            declarer: int = -1) -> PlayState:
        s = PlayState()
        s.tr = tr
        s.n = n
        s.nactive = len(active)
        nxt = [0] * n
        for k, seat in enumerate(active):
            nxt[seat] = active[(k + 1) % len(active)]
        s.nxt = tuple(nxt)
        s.hands = list(hands)
        s.trick = []
        s.lead_suit = -1
        s.leader = leader
        s.to_act = leader
        s.trump = -1
        s.trump_by = -1
        s.last_marriage = 0
        s.tricks_taken = [0] * n
        s.taken_points = [0] * n
        s.marriage_points = [0] * n
        s.aces_pending = [False] * n
        s.crawl = False
        s.declarer = declarer
        s.last_trick = -1
        s.extra_last = 0
        s.extra_declarer = 0
        return s

    def copy(self) -> PlayState:
        s = PlayState()
        copy_tricks(self, s)
        s.to_act = self.to_act
        s.extra_last = self.extra_last
        s.extra_declarer = self.extra_declarer
        return s

    # The search's short names for the points and tricks taken and the marriages scored.
    @property
    def tricks(self) -> list[int]:
        return self.tricks_taken

    @property
    def taken(self) -> list[int]:
        return self.taken_points

    @property
    def marr(self) -> list[int]:
        return self.marriage_points

    @property
    def over(self) -> bool:
        return not self.trick and not any(self.hands)

    def legal(self) -> list[int]:
        """Legal moves of the seat to act, in the engine's order."""
        p = self.to_act
        allowed = self.play_mask(p)
        out = cards_of(allowed)
        if not self.trick and self.may_declare(p):
            out += self.declarations(p, allowed)
        return out

    def apply(self, move: int) -> None:
        """Play a legal move (not checked: a search only generates legal ones)."""
        kind = move >> 5
        c = move & 31
        p = self.to_act
        if kind:
            self.declare(p, kind, c)
        self.to_act = self.play(p, c)

    def raw_points(self) -> list[int]:
        """Each seat's deal points as the engine adds them up, once the deal is played."""
        raw = [self.taken_points[s] + self.marriage_points[s] for s in range(self.n)]
        if self.last_trick >= 0:
            raw[self.last_trick] += self.extra_last
        if self.declarer >= 0:
            raw[self.declarer] += self.extra_declarer
        return raw
