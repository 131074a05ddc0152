"""The leaderboard: one row per player with rating, interval and plain descriptive figures."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from arena.ratings.bradley_terry import fit_bradley_terry
from arena.ratings.data import GameResult, GameTable, PairData

DEFAULT_BOOTSTRAP = 200
"""Replicates for the table's intervals: the 2.5%/97.5% percentiles of 200 draws move by a
few percent of the interval width between seeds, which is fine for display, and 1M games
still rate in a couple of seconds."""


@dataclass(frozen=True, slots=True)
class RatingRow:
    """One leaderboard line.

    ``rating``/``ci_low``/``ci_high`` are Bradley-Terry Elo with a bootstrap interval over
    groups. ``games`` counts games played; ``mean_score`` is the average final points in
    those games (NaN if points were not recorded); ``win_rate`` the share of games finished
    first (a shared first place counts); ``pair_score`` the share of pairwise comparisons
    won (tie = half), which is the quantity the rating models.
    """

    player: str
    rating: float
    ci_low: float
    ci_high: float
    games: int
    mean_score: float
    win_rate: float
    pair_score: float


def ratings_table(
    results: Iterable[GameResult] | GameTable,
    *,
    anchor: str | None = None,
    prior_draws: float = 1.0,
    n_bootstrap: int = DEFAULT_BOOTSTRAP,
    confidence: float = 0.95,
    seed: int = 0,
) -> list[RatingRow]:
    """Rate everyone and return rows sorted best first (name breaks ties, for stable output).

    Unlike :func:`fit_bradley_terry`, the weak prior is on by default (one virtual draw per
    player): a table must render even when someone is unbeaten so far, and bootstrap
    replicates often create such records. Pass ``prior_draws=0`` for the bare MLE.
    """
    table = results if isinstance(results, GameTable) else GameTable.from_results(results)
    pairs = PairData.from_table(table)
    fit = fit_bradley_terry(
        pairs,
        anchor=anchor,
        prior_draws=prior_draws,
        n_bootstrap=n_bootstrap,
        confidence=confidence,
        seed=seed,
    )
    p = len(table.players)
    occupied = table.seats >= 0
    who = table.seats[occupied]
    games = np.bincount(who, minlength=p)
    points = np.bincount(who, weights=table.scores[occupied], minlength=p)
    firsts = np.bincount(who, weights=(table.ranks[occupied] == 1).astype(float), minlength=p)
    wins, pair_games = pairs.totals()
    scored, met = wins.sum(axis=1), pair_games.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_score = np.where(games > 0, points / games, np.nan)
        win_rate = np.where(games > 0, firsts / games, np.nan)
        pair_score = np.where(met > 0, scored / met, np.nan)
    rows = [
        RatingRow(
            player=name,
            rating=float(fit.ratings[i]),
            ci_low=float(fit.ci_low[i]),
            ci_high=float(fit.ci_high[i]),
            games=int(games[i]),
            mean_score=float(mean_score[i]),
            win_rate=float(win_rate[i]),
            pair_score=float(pair_score[i]),
        )
        for i, name in enumerate(table.players)
    ]
    return sorted(rows, key=lambda r: (-r.rating, r.player))
