"""Ratings for Thousand Arena: batch Elo with intervals, live league ratings, and SPRT.

The unit of independence everywhere is the *group* (a duplicate set or seed group), never
the single game: games that share their deals are correlated, and counting them as
independent would make every interval and test overconfident. See ``docs/ratings.md``.
"""

from arena.ratings.bradley_terry import BradleyTerryFit, fit_bradley_terry, solve_bradley_terry
from arena.ratings.data import GameResult, GameTable, GroupId, PairData
from arena.ratings.elo import (
    ELO_PER_NAT,
    NELO_PER_T,
    EloEstimate,
    LosMatrix,
    elo_from_distribution,
    elo_from_pentanomial,
    elo_from_wld,
    elo_to_score,
    los,
    los_matrix,
    score_to_elo,
)
from arena.ratings.live import LiveLeague, LiveRating
from arena.ratings.sprt import (
    Decision,
    Sprt,
    SprtResult,
    llr,
    llr_pentanomial,
    llr_trinomial,
    scores_distribution,
    sprt_bounds,
)
from arena.ratings.table import RatingRow, ratings_table

__all__ = [
    "ELO_PER_NAT",
    "NELO_PER_T",
    "BradleyTerryFit",
    "Decision",
    "EloEstimate",
    "GameResult",
    "GameTable",
    "GroupId",
    "LiveLeague",
    "LiveRating",
    "LosMatrix",
    "PairData",
    "RatingRow",
    "Sprt",
    "SprtResult",
    "elo_from_distribution",
    "elo_from_pentanomial",
    "elo_from_wld",
    "elo_to_score",
    "fit_bradley_terry",
    "llr",
    "llr_pentanomial",
    "llr_trinomial",
    "los",
    "los_matrix",
    "ratings_table",
    "score_to_elo",
    "scores_distribution",
    "solve_bradley_terry",
    "sprt_bounds",
]
