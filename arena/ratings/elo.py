"""Elo difference, error bar and likelihood of superiority from match counts.

These are the quick head-to-head figures that chess tools print after a match, reproduced
exactly so a reader can compare our numbers with theirs:

* :func:`elo_from_wld` reproduces cutechess-cli (including its approximate normal quantile,
  which is why ``99-97-104`` prints ``± 31.8`` and not ``± 31.9``).
* :func:`elo_from_distribution` / :func:`elo_from_pentanomial` follow fishtest and fastchess:
  the sample is a game *pair* (or any set of games that share cards), because those games are
  not independent and treating them as such understates the error.
* :func:`los_matrix` gives the likelihood of superiority for every pair of players, counting
  whole groups (duplicate sets) rather than games.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike

from arena.ratings.data import FloatArray, GameResult, GameTable, PairData

ELO_PER_NAT = 400.0 / math.log(10.0)
"""Elo points per natural-log unit of odds: the Elo scale is base-10 logistic with 400."""

NELO_PER_T = 800.0 / math.log(10.0)
"""Normalised Elo per unit of t-value (fishtest's ``nelo_divided_by_nt``)."""

_STD_NORMAL = NormalDist()


def elo_to_score(elo: float) -> float:
    """Expected score of a player ``elo`` points stronger than its opponent."""
    return 1.0 / (1.0 + math.pow(10.0, -elo / 400.0))


def score_to_elo(score: float) -> float:
    """Inverse of :func:`elo_to_score`; a perfect or zero score maps to ±infinity."""
    if score <= 0.0:
        return -math.inf
    if score >= 1.0:
        return math.inf
    return -400.0 * math.log10(1.0 / score - 1.0)


def los(wins: float, losses: float) -> float:
    """Likelihood of superiority from decisive games (draws carry no information here).

    Normal approximation of the sign test, as cutechess and BayesElo print it:
    ``LOS = Phi((W - L) / sqrt(W + L))``. With no decisive game the answer is a coin flip.
    """
    _check_counts([wins, losses], "wins/losses", allow_empty=True)
    w, l_ = float(wins), float(losses)
    if w + l_ == 0:
        return 0.5
    return 0.5 * (1.0 + math.erf((w - l_) / math.sqrt(2.0 * (w + l_))))


@dataclass(frozen=True, slots=True)
class EloEstimate:
    """Head-to-head estimate for one player against another (or against a field).

    ``error`` is the half-width of the confidence interval in Elo; ``los`` is a probability in
    [0, 1]; ``nelo`` is normalised Elo (the score's t-value scaled to Elo units, per game),
    the scale in which a test's cost does not depend on the draw rate.
    """

    elo: float
    error: float
    los: float
    score: float
    samples: float
    nelo: float
    nelo_error: float

    def __str__(self) -> str:
        los = f"LOS {100.0 * self.los:.1f}%"
        if math.isfinite(self.elo) and math.isfinite(self.error):
            return f"{self.elo:.1f} ± {self.error:.1f} ({los})"
        # A score at (or within its error of) 0 or 1 has no finite Elo bound: say that
        # rather than print "± inf", which reads like a measured but huge error.
        edge = "100%" if self.score > 0.5 else "0%"
        if not math.isfinite(self.elo):
            return (f"{'+' if self.elo > 0 else '-'}inf (a score of {edge}: no finite "
                    f"estimate; {los})")
        return (f"{self.elo:.1f}, interval unbounded (a score of {100.0 * self.score:.1f}% "
                f"is within its error of {edge}; {los})")


def elo_from_wld(
    wins: float,
    losses: float,
    draws: float,
    *,
    confidence: float = 0.95,
    exact_quantile: bool = False,
) -> EloEstimate:
    """Elo difference, error bar and LOS from win/loss/draw counts, as cutechess-cli prints them.

    The score's standard error treats games as independent. cutechess derives the normal
    quantile from a closed-form approximation of ``erf^-1`` (1.95716 instead of 1.95996 at
    95%); ``exact_quantile=False`` keeps that so output matches it to the printed digit.
    The LOS is the sign-test approximation of :func:`los` (draws ignored), again as cutechess.
    """
    _check_counts([wins, losses, draws], "wins/losses/draws")
    w, l_, d = float(wins), float(losses), float(draws)
    est = _estimate([0.0, 0.5, 1.0], [l_, d, w], 1.0, confidence, exact_quantile=exact_quantile)
    return EloEstimate(
        est.elo, est.error, los(w, l_), est.score, est.samples, est.nelo, est.nelo_error
    )


def elo_from_pentanomial(counts: Sequence[float], *, confidence: float = 0.95) -> EloEstimate:
    """Elo, error and normalised Elo from game-pair counts, as fastchess prints them.

    ``counts`` are the pairs whose two-game total was 0, 0.5, 1, 1.5 and 2 points (LL, LD,
    WL+DD, WD, WW). The pair, not the game, is the sample, because both games of a pair
    are played on the same deal.
    """
    if len(counts) != 5:
        raise ValueError(f"pentanomial counts need 5 entries, got {len(counts)}")
    return elo_from_distribution(
        [0.0, 0.25, 0.5, 0.75, 1.0], counts, games_per_sample=2, confidence=confidence
    )


def elo_from_distribution(
    values: ArrayLike,
    counts: ArrayLike,
    *,
    games_per_sample: float = 1.0,
    confidence: float = 0.95,
) -> EloEstimate:
    """Elo estimate from an empirical distribution of per-sample mean scores.

    ``values`` are the possible mean scores of one sample (in [0, 1]; luck-adjusted scores may
    leave it a little, and a mean beyond it maps to infinite Elo); ``counts`` how often
    each occurred. A sample is whatever is independent: a game, a game pair, or a 3-player
    duplicate set of 6 games (whose mean pairwise score takes 13 values). The interval is the
    normal approximation on the mean score mapped through the logistic curve (fishtest's
    ``get_elo``); ``games_per_sample`` only matters for normalised Elo, which is quoted per
    game. The LOS is ``Phi((mean - 1/2) / standard error)``.
    """
    vals = np.asarray(values, dtype=np.float64)
    cnts = np.asarray(counts, dtype=np.float64)
    if vals.ndim != 1 or cnts.shape != vals.shape or vals.size == 0:
        raise ValueError("values and counts must be non-empty 1-D arrays of equal length")
    if not np.all(np.isfinite(vals)):
        raise ValueError("score values must be finite")
    _check_counts(cnts.tolist(), "counts")
    if not games_per_sample > 0:
        raise ValueError(f"games_per_sample must be positive, got {games_per_sample}")
    return _estimate(vals.tolist(), cnts.tolist(), games_per_sample, confidence)


def _estimate(
    values: Sequence[float],
    counts: Sequence[float],
    games_per_sample: float,
    confidence: float,
    *,
    exact_quantile: bool = True,
) -> EloEstimate:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    n = float(sum(counts))
    mu = sum(v * c for v, c in zip(values, counts, strict=True)) / n
    var = sum(c * (v - mu) ** 2 for v, c in zip(values, counts, strict=True)) / n
    se = math.sqrt(var / n)
    p_hi = 0.5 + confidence / 2.0
    z = _STD_NORMAL.inv_cdf(p_hi) if exact_quantile else _cutechess_phi_inv(p_hi)
    elo = score_to_elo(mu)
    hi, lo = score_to_elo(mu + z * se), score_to_elo(mu - z * se)
    error = (hi - lo) / 2.0 if math.isfinite(hi) and math.isfinite(lo) else math.inf
    los_ = _los_normal(mu, se)
    sigma_game = math.sqrt(games_per_sample * var)
    if sigma_game > 0.0:
        nelo = (mu - 0.5) / sigma_game * NELO_PER_T
        nelo_error = z * se / sigma_game * NELO_PER_T
    else:
        nelo = 0.0 if mu == 0.5 else math.copysign(math.inf, mu - 0.5)
        nelo_error = 0.0
    return EloEstimate(elo, error, los_, mu, n, nelo, nelo_error)


def _los_normal(mu: float, se: float) -> float:
    """P(true mean score > 1/2) under the normal approximation; certain when se is 0."""
    if se > 0.0:
        return _STD_NORMAL.cdf((mu - 0.5) / se)
    return 0.5 if mu == 0.5 else float(mu > 0.5)


def _cutechess_phi_inv(p: float) -> float:
    """Normal quantile through Winitzki's closed-form erf^-1, as cutechess-cli computes it.

    Kept only to reproduce cutechess's printed error bars; it is about 0.15% low at 97.5%.
    """
    x = 2.0 * p - 1.0
    pi = 3.1415926535897  # cutechess's truncated constant, kept for digit-exact output
    a = 8.0 * (pi - 3.0) / (3.0 * pi * (4.0 - pi))
    y = math.log(1.0 - x * x)
    z = 2.0 / (pi * a) + y / 2.0
    r = math.sqrt(math.sqrt(z * z - y / a) - z)
    return math.sqrt(2.0) * (-r if x < 0.0 else r)


@dataclass(frozen=True, eq=False)
class LosMatrix:
    """``matrix[i, j]`` = likelihood that ``players[i]`` is stronger than ``players[j]``."""

    players: tuple[str, ...]
    matrix: FloatArray

    def get(self, a: str, b: str) -> float:
        return float(self.matrix[self.players.index(a), self.players.index(b)])


def los_matrix(results: Iterable[GameResult] | GameTable | PairData) -> LosMatrix:
    """Likelihood of superiority between every pair of players, groups as the sample.

    Multiplayer games are split into pairs by final rank. For a pair (i, j), each group g
    contributes ``d_g`` = i's score minus j's score over their meetings in that group, and
    ``LOS = Phi(sum d_g / sqrt(sum d_g^2))``. When every group is a single game this is
    exactly the cutechess/BayesElo formula ``Phi((W - L) / sqrt(W + L))``; with duplicate sets
    it stops counting correlated games as independent evidence. Pairs that never produced a
    decisive difference get 0.5, and so does the diagonal.
    """
    data = PairData.of(results)
    p = data.n_players
    d = 2.0 * data.score - data.games
    cell = data.lo * p + data.hi
    sum_d = np.bincount(cell, weights=d, minlength=p * p).reshape(p, p)
    sum_d2 = np.bincount(cell, weights=d * d, minlength=p * p).reshape(p, p)
    z = np.divide(sum_d, np.sqrt(sum_d2), out=np.zeros_like(sum_d), where=sum_d2 > 0)
    upper = np.array([_STD_NORMAL.cdf(v) for v in z.ravel()]).reshape(p, p)
    iu = np.triu_indices(p, 1)
    matrix = np.full((p, p), 0.5)
    matrix[iu] = upper[iu]
    matrix.T[iu] = 1.0 - upper[iu]
    return LosMatrix(data.players, matrix)


def _check_counts(counts: Sequence[float], what: str, *, allow_empty: bool = False) -> None:
    for c in counts:
        if isinstance(c, bool) or not isinstance(c, numbers.Real) or not math.isfinite(c) or c < 0:
            raise ValueError(f"{what} must be finite non-negative numbers, got {list(counts)!r}")
    if not allow_empty and sum(counts) <= 0:
        raise ValueError(f"{what} are all zero: there is nothing to estimate from")
