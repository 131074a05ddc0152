"""The search's play engine: the engine's own trick rules, with moves as small integers.

The search plays out thousands of deal endings per decision.  It does so on
:class:`~arena.engine.position.PlayState`, a position with every hand known that runs the
trick rules the referee enforces (:mod:`arena.engine.tricks`, compiled with the engine),
without the general action objects, event log and observations of a whole
:class:`~arena.engine.Game`.  ``tests/bots/test_search_lean.py`` still plays the two side
by side on random deals of every preset.

A move is ``kind << 5 | card`` (kinds ``PLAY`` to ``CRAWL``); :func:`move_text` gives the
engine's notation.
"""

from __future__ import annotations

from arena.engine.actions import MOVE_ACTIONS
from arena.engine.cards import ACES_MASK, KQ, NINES_MASK, QUEENS_MASK, cards_of, mask_points
from arena.engine.position import PlayState
from arena.engine.tricks import ACES, CRAWL, HALF, MARRY, NINES, PLAY, TrickRules

#: The play-phase options as the search reads them (the engine's own).
LeanRules = TrickRules
QUEENS = QUEENS_MASK

_MOVE_BY_TEXT = {a.text: move for move, a in enumerate(MOVE_ACTIONS)}


def move_text(move: int) -> str:
    return MOVE_ACTIONS[move].text


def parse_move(text: str) -> int | None:
    """The move for a play-phase action text, None for anything else."""
    return _MOVE_BY_TEXT.get(text)


__all__ = [
    "ACES",
    "ACES_MASK",
    "CRAWL",
    "HALF",
    "KQ",
    "MARRY",
    "NINES",
    "NINES_MASK",
    "PLAY",
    "QUEENS",
    "LeanRules",
    "PlayState",
    "cards_of",
    "mask_points",
    "move_text",
    "parse_move",
]
