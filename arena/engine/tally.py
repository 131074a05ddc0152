"""The score sheet of one deal, as the scoring stages pass it on (:mod:`.scoring`), and
what the stages share: rounding, the target, the leaders."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .rules import Rules
from .state import State


class Tally:
    """One deal's scoring in progress, handed from stage to stage.

    ``contract`` is what the contract brings each seat (written even on the barrel) and
    ``plain`` every other point a seat scores (not written while it sits on the barrel).
    """

    __slots__ = ("before", "conceded", "contract", "falls", "info", "made", "penalties",
                 "plain", "winners")

    def __init__(self, n: int, conceded: int) -> None:
        #: The conceding seat, or -1 for a deal played out.
        self.conceded = conceded
        self.contract = [0] * n
        self.plain = [0] * n
        self.made = False
        #: What the deal's record says besides the standard fields, in order.
        self.info: dict[str, Any] = {"conceded": conceded} if conceded >= 0 else {}
        #: The totals before the deal was written.
        self.before: list[int] = []
        #: The bolt penalty each seat paid this deal (empty: none).
        self.penalties: list[int] = []
        #: Seats that fell off the barrel this deal, and those that finished the game.
        self.falls: list[int] = []
        self.winners: list[int] = []


Stage = Callable[[State, Tally], None]


def round5(x: int) -> int:
    """Nearest multiple of 5, halves up (62 -> 60, 63 -> 65)."""
    return (x + 2) // 5 * 5


def leaders(scores: list[int]) -> list[int]:
    """The seats with the highest total (who win a game stopped at its deal limit)."""
    top = max(scores)
    return [s for s in range(len(scores)) if scores[s] == top]


def reached(rules: Rules, score: int) -> bool:
    """Whether a total reaches the target (or goes above it, ``win_above_target``)."""
    return score > rules.target if rules.win_above_target else score >= rules.target
