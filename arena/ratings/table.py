"""The leaderboard: one row per player with rating, interval and plain descriptive figures."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from arena.ratings.bradley_terry import fit_bradley_terry
from arena.ratings.data import GameResult, GameTable, PairData

__all__ = ["DEFAULT_BOOTSTRAP", "RatingRow", "bounded_players", "ratings_table"]

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
    #: False when the results set no bound on this player's rating: it won (or lost) every
    #: game against the others, directly or through a chain (see :func:`bounded_players`).
    bounded: bool = True


def ratings_table(
    results: Iterable[GameResult] | GameTable,
    *,
    anchor: str | None = None,
    prior_draws: float = 1.0,
    n_bootstrap: int = DEFAULT_BOOTSTRAP,
    confidence: float = 0.95,
    seed: int = 0,
    adjusted: bool = False,
) -> list[RatingRow]:
    """Rate everyone and return rows sorted best first (name breaks ties, for stable output).

    Unlike :func:`fit_bradley_terry`, the weak prior is on by default (one virtual draw per
    player): a table must render even when someone is unbeaten so far, and bootstrap
    replicates often create such records. Pass ``prior_draws=0`` for the bare MLE.

    ``adjusted`` rates the luck-adjusted pairwise scores (``table.luck``) instead of the raw
    ones. Players the results do not bound (:func:`bounded_players`) are marked; without an
    explicit ``anchor``, the mean-0 scale is then the mean of the bounded players, so
    their ratings and intervals come from the results alone and not from the prior that
    keeps the others finite.
    """
    table = results if isinstance(results, GameTable) else GameTable.from_results(results)
    pairs = PairData.from_table(table)
    if adjusted:
        pairs = _adjusted(table, pairs)
    fit = fit_bradley_terry(
        pairs,
        anchor=anchor,
        prior_draws=prior_draws,
        n_bootstrap=n_bootstrap,
        confidence=confidence,
        seed=seed,
    )
    bounded = bounded_players(pairs)
    ratings, ci_low, ci_high = fit.ratings, fit.ci_low, fit.ci_high
    keep = np.array([name in bounded for name in pairs.players])
    if anchor is None and keep.any() and not keep.all():
        ratings = ratings - ratings[keep].mean()
        if fit.bootstrap_ratings is not None:
            reps = fit.bootstrap_ratings - fit.bootstrap_ratings[:, keep].mean(
                axis=1, keepdims=True)
            tail = (1.0 - confidence) / 2.0
            ci_low, ci_high = np.quantile(reps, [tail, 1.0 - tail], axis=0)
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
            rating=float(ratings[i]),
            ci_low=float(ci_low[i]),
            ci_high=float(ci_high[i]),
            games=int(games[i]),
            mean_score=float(mean_score[i]),
            win_rate=float(win_rate[i]),
            pair_score=float(pair_score[i]),
            bounded=name in bounded,
        )
        for i, name in enumerate(table.players)
    ]
    return sorted(rows, key=lambda r: (-r.rating, r.player))


def _adjusted(table: GameTable, raw: PairData) -> PairData:
    """The luck-adjusted pairs, except for a pair whose raw results are one-sided (one of
    the two never scored against the other): the luck of the deals cannot say how far
    apart two players are when one always won, so such a pair keeps its raw results (and
    its players stay unbounded, as without adjustment)."""
    adj = PairData.from_table(table, adjusted=True)
    p = raw.n_players
    wins, games = raw.totals()
    one_sided = ((wins == 0) | (wins == games)) & (games > 0)
    keep = one_sided[adj.lo, adj.hi]
    assert np.array_equal(adj.group, raw.group) and np.array_equal(adj.lo * p + adj.hi,
                                                                   raw.lo * p + raw.hi)
    score = np.where(keep, raw.score, adj.score)
    return PairData(adj.players, adj.group, adj.lo, adj.hi, score, adj.games, adj.n_groups)


def bounded_players(pairs: PairData) -> set[str]:
    """The players whose ratings the results bound, without the prior.

    The maximum-likelihood ratings exist exactly when the graph "i scored something against
    j" is strongly connected (Zermelo; Hunter 2004). When it is not, its strongly connected
    components are ordered: one of them won every game against another. Inside a component
    the rating differences are bounded by the results; across components they are whatever
    the prior's virtual draws make them. The largest component (at least two players; the
    most games, then the first names, break ties) is the one whose intervals mean
    something; everyone else is unbounded, each on their own, so one player who lost every
    game does not hide how well the others are measured.
    """
    from scipy.sparse.csgraph import connected_components

    wins, games = pairs.totals()
    p = pairs.n_players
    if p < 2 or not (games > 0).any():
        return set()
    n_comp, label = connected_components(wins > 0, directed=True, connection="strong")
    if n_comp == 1:
        return set(pairs.players)
    played = games.sum(axis=1)
    best: tuple[int, float, int] | None = None
    for c in range(n_comp):
        members = np.flatnonzero(label == c)
        if members.size < 2:
            continue
        key = (int(members.size), float(played[members].sum()), -int(members.min()))
        if best is None or key > best:
            best = key
    if best is None:
        return set()
    chosen = label[-best[2]]
    return {pairs.players[i] for i in range(p) if label[i] == chosen}
