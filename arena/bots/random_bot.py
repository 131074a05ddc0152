"""The random bot: a uniform choice among the legal actions.

It is the baseline every other bot must beat and the cheapest way to reach every corner
of the rules in tests.  Its choices come from the arena's seeded stream (SHA-256 of the
seed text, see :mod:`arena.engine.shuffle`), never from the global random generator, so
a match with random bots replays move for move.
"""

from __future__ import annotations

from collections.abc import Sequence

from arena.engine import SeedStream
from arena.match.types import JSON


class RandomBot:
    """Plays a uniformly random legal action."""

    def __init__(self, seed: str = "random", name: str = "random") -> None:
        self.name = name
        self._stream = SeedStream(f"{seed}/random-bot")

    def decide(self, observation: JSON, legal: Sequence[str]) -> str:
        if len(legal) == 1:
            return legal[0]
        return legal[self._stream.uniform(len(legal))]
