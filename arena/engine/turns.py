"""Walking a game from decision to decision, for whoever plays all its seats in one loop."""

from __future__ import annotations

from collections.abc import Iterator

from .actions import Action
from .game import Game


def turns(game: Game) -> Iterator[tuple[int, list[Action]]]:
    """Each decision of ``game`` until it is over: the seat to act and its legal actions,
    the deals between them made on the way. The caller applies an action to ``game``
    before asking for the next."""
    while not game.is_over:
        if game.is_chance:
            game.deal()
            continue
        seat = game.to_act
        assert seat is not None
        yield seat, game.legal_actions()
