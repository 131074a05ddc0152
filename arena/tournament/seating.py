"""Seatings and the numbering of matches, shared by every format of
:mod:`arena.tournament.formats`, fixed or adaptive:
every format seats its tables and derives its match ids and seeds the same way, so that a
match's id and deals depend on the tournament's seed and the match's place alone."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from arena.match.types import MatchSpec
from arena.tournament.model import ScheduledMatch
from arena.tournament.spec import Participant, TournamentSpec

Seating = tuple[int, ...]


# ---------------------------------------------------------------------------------------
# Seatings


def all_seatings(k: int) -> list[Seating]:
    """Every seat permutation, in lexicographic order."""
    return [tuple(p) for p in itertools.permutations(range(k))]


def latin_seatings(k: int) -> list[Seating]:
    """A Latin square of seatings: each player sits in each seat once.

    For an even table size it is a Williams design, so each player also sits directly
    after each other player once (who plays after whom matters in a trick game).  For an
    odd size it is the cyclic rotations.
    """
    if k <= 2:
        return all_seatings(k)
    if k % 2 == 0:
        first = [0]
        lo, hi = 1, k - 1
        while len(first) < k:
            first.append(lo)
            lo += 1
            if len(first) < k:
                first.append(hi)
                hi -= 1
        rows = [tuple((x + i) % k for x in first) for i in range(k)]
    else:
        rows = [tuple((s + i) % k for s in range(k)) for i in range(k)]
    # Row r says which table member sits in each seat; it must be a permutation.
    return [tuple(row) for row in rows]


def seatings_for(k: int, mode: str) -> list[Seating]:
    return latin_seatings(k) if mode == "latin" else all_seatings(k)


# ---------------------------------------------------------------------------------------
# Building matches


@dataclass
class MatchBuilder:
    """Numbers matches and derives their ids and seeds from the tournament's seed."""

    spec: TournamentSpec
    next_index: int = 0
    next_set: int = 0

    def match(
        self, members: Sequence[Participant], key: str, group: str, rnd: int
    ) -> ScheduledMatch:
        """Match number ``next_index``, dealt from the seed derived for ``key``."""
        index = self.next_index
        self.next_index += 1
        s = self.spec
        match_id = s.match_id(index)
        seed = s.derive(key)
        mspec = MatchSpec(
            match_id=match_id,
            rules=s.rules,
            seed=seed,
            bots=tuple(p.bot for p in members),
            time_control=s.time_control,
            max_deals=s.max_deals,
            commitment=s.match_commitment(match_id, seed, key),
        )
        return ScheduledMatch(
            tournament=s.name,
            index=index,
            group=group,
            round=rnd,
            players=tuple(p.name for p in members),
            spec=mspec,
        )

    def single(self, members: Sequence[Participant], rnd: int = 0) -> ScheduledMatch:
        """A match with its own deals (not part of a duplicate set)."""
        index = self.next_index
        return self.match(members, f"game/{index}", f"game-{index}", rnd)

    def duplicate_set(
        self, table: Sequence[Participant], seatings: Sequence[Seating], rnd: int = 0
    ) -> list[ScheduledMatch]:
        """One seeded deal sequence played once per seating: the set shares seed and group."""
        set_index = self.next_set
        self.next_set += 1
        key = f"set/{set_index}"
        group = f"set-{set_index}"
        return [self.match([table[i] for i in seating], key, group, rnd) for seating in seatings]
