"""What every tournament format gives the scheduler, and what the formats share."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from arena.tournament.model import ResultRecord, ScheduledMatch


class Format(Protocol):
    """What the scheduler needs from a format."""

    def next_batch(self, done: Mapping[str, ResultRecord]) -> list[ScheduledMatch] | None:
        """Matches to play next (some may already be done), or None when finished."""
        ...

    def planned_total(self) -> int | None:
        """Number of matches the format will play, when known in advance."""
        ...


def pair_score(rec: ResultRecord, a: str, b: str, *, adjusted: bool = False) -> float:
    """A's score against B in one game: 1 if A finished ahead, 0.5 level, 0 behind; with
    ``adjusted``, minus A's luck against B in the deals (see ``docs/ratings.md``)."""
    sa, sb = rec.players.index(a), rec.players.index(b)
    ra, rb = rec.ranks[sa], rec.ranks[sb]
    score = 1.0 if ra < rb else 0.5 if ra == rb else 0.0
    return score - rec.seat_luck(sa, sb) if adjusted else score
