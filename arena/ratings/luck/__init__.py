"""Luck-adjusted results: subtract from each game what the deals alone were worth.

See :mod:`arena.ratings.luck.model` for the value function and ``docs/ratings.md`` for the
estimator and why it leaves every expected result unchanged.
"""

from arena.ratings.luck.features import DealShape
from arena.ratings.luck.model import (
    DealLog,
    GameLuck,
    LuckModel,
    luck_of_replay,
    model_for,
    seat_pairs,
    shipped_model,
)

__all__ = [
    "DealLog",
    "DealShape",
    "GameLuck",
    "LuckModel",
    "luck_of_replay",
    "model_for",
    "seat_pairs",
    "shipped_model",
]
