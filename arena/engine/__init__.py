"""The rules engine of 1000: pure, deterministic, fast, no I/O.

Typical use::

    from arena.engine import Game, Rules

    game = Game(Rules.preset("classic"), seed="my-seed")
    while not game.is_over:
        if game.is_chance:
            game.deal()
        else:
            game.apply(game.legal_actions()[0])
"""

from .actions import Action, as_action, format_action, parse_action
from .cards import card_str, cards_str, hand_str, parse_card
from .errors import EngineError, IllegalActionError, NotationError, ReplayError, RulesError
from .game import PHASE_NAMES, DealRecord, Game, public_text
from .rules import OPTIONS, PRESETS, Rules
from .shuffle import SeedStream, deal_seed, derive_seed, shuffled

__all__ = [
    "OPTIONS",
    "PHASE_NAMES",
    "PRESETS",
    "Action",
    "DealRecord",
    "EngineError",
    "Game",
    "IllegalActionError",
    "NotationError",
    "ReplayError",
    "Rules",
    "RulesError",
    "SeedStream",
    "as_action",
    "card_str",
    "cards_str",
    "deal_seed",
    "derive_seed",
    "format_action",
    "hand_str",
    "parse_action",
    "parse_card",
    "public_text",
    "shuffled",
]
