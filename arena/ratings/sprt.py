"""Generalised sequential probability ratio test (GSPRT), as Fishtest and fastchess run it.

Question answered: "is A at least ``elo1`` stronger than B, or at most ``elo0``?" while the
games are still being played, stopping as soon as the evidence is strong enough.

How it works (Van den Bergh, "Comments on normalized Elo" / "A practical introduction to
the GSPRT"): the data is an empirical distribution over the possible scores of one
independent sample (a game: 3 outcomes; a game pair: 5; a 3-player duplicate set of 6 games:
up to 13). Under each hypothesis we take the *maximum-likelihood* distribution that satisfies
the hypothesis (mean score = L(elo) for the logistic model, t-value = the normalised Elo for
the normalised model), and the log-likelihood ratio is

    LLR = N * sum_i phat_i * (log p1_i - log p0_i).

No draw model is needed, which is why the same code covers trinomial, pentanomial and any
duplicate format. Wald's bounds are ``log(beta / (1 - alpha))`` and
``log((1 - beta) / alpha)``.

Empty outcome classes are given a count of 1e-3, like both reference tools: it keeps the
maximum-likelihood problem solvable when a class has not occurred yet and is negligible once
it has data.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from arena.ratings.data import FloatArray
from arena.ratings.elo import NELO_PER_T, EloEstimate, elo_from_distribution, elo_to_score

Model = Literal["logistic", "normalized"]

REGULARIZATION = 1e-3
"""Pseudo-count for an outcome class never observed (same as fishtest and fastchess)."""

TRINOMIAL_VALUES = (0.0, 0.5, 1.0)
PENTANOMIAL_VALUES = (0.0, 0.25, 0.5, 0.75, 1.0)


class Decision(enum.StrEnum):
    H0 = "H0 accepted"
    H1 = "H1 accepted"
    CONTINUE = "continue"


def sprt_bounds(alpha: float = 0.05, beta: float = 0.05) -> tuple[float, float]:
    """Wald's (lower, upper) LLR bounds for type I error ``alpha`` and type II error ``beta``."""
    _check_errors(alpha, beta)
    return math.log(beta / (1.0 - alpha)), math.log((1.0 - beta) / alpha)


def llr(
    values: ArrayLike,
    counts: ArrayLike,
    elo0: float,
    elo1: float,
    *,
    model: Model = "logistic",
    games_per_sample: float = 1.0,
) -> float:
    """Generalised LLR of H1 (``elo1``) against H0 (``elo0``) for an empirical distribution.

    ``values`` are the possible mean scores per sample (in [0, 1], per game), ``counts`` how
    often each occurred. ``model="logistic"``: the hypotheses fix the expected score at
    ``1 / (1 + 10^(-elo/400))``. ``model="normalized"``: they fix the t-value
    ``(mean - 1/2) / sigma`` of one sample at ``sqrt(games_per_sample) * nelo / (800/ln 10)``,
    where ``games_per_sample`` converts the per-game normalised Elo to the sample (2 for a
    game pair, 6 for a 3-player duplicate set); it is ignored by the logistic model.
    """
    vals, phat, total = _distribution(values, counts)
    if elo0 >= elo1:
        raise ValueError(f"elo0 must be below elo1, got [{elo0}, {elo1}]")
    if model == "logistic":
        p0 = _mle_mean(vals, phat, elo_to_score(elo0))
        p1 = _mle_mean(vals, phat, elo_to_score(elo1))
    elif model == "normalized":
        if not games_per_sample > 0:
            raise ValueError(f"games_per_sample must be positive, got {games_per_sample}")
        scale = math.sqrt(games_per_sample) / NELO_PER_T
        p0 = _mle_t_value(vals, phat, 0.5, elo0 * scale)
        p1 = _mle_t_value(vals, phat, 0.5, elo1 * scale)
    else:
        raise ValueError(f"model must be 'logistic' or 'normalized', got {model!r}")
    return float(total * np.dot(phat, np.log(p1) - np.log(p0)))


def llr_trinomial(
    wins: float, losses: float, draws: float, elo0: float, elo1: float, *, model: Model = "logistic"
) -> float:
    """LLR from single-game win/loss/draw counts (games assumed independent)."""
    return llr(TRINOMIAL_VALUES, [losses, draws, wins], elo0, elo1, model=model)


def llr_pentanomial(
    counts: Sequence[float], elo0: float, elo1: float, *, model: Model = "logistic"
) -> float:
    """LLR from game-pair counts with pair totals 0, 0.5, 1, 1.5, 2 (LL, LD, WL+DD, WD, WW)."""
    if len(counts) != 5:
        raise ValueError(f"pentanomial counts need 5 entries, got {len(counts)}")
    return llr(PENTANOMIAL_VALUES, counts, elo0, elo1, model=model, games_per_sample=2.0)


def scores_distribution(
    scores: ArrayLike, support: ArrayLike | None = None, *, adjusted: bool = False
) -> tuple[FloatArray, FloatArray]:
    """Turn per-sample mean scores into (values, counts) for :func:`llr`.

    ``support`` lists every value a sample *could* take (e.g. ``k/12`` for a 3-player
    duplicate set); values that never occurred then get the small pseudo-count. 0 and 1
    are always included, so the hypotheses' mean scores always lie inside the support.
    ``adjusted`` accepts luck-adjusted scores, which may lie a little outside [0, 1].
    """
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1 or s.size == 0:
        raise ValueError("scores must be a non-empty 1-D sequence of per-sample mean scores")
    if not np.all(np.isfinite(s)):
        raise ValueError("per-sample scores must be finite")
    if not adjusted and not np.all((s >= 0.0) & (s <= 1.0)):
        raise ValueError("per-sample scores must lie in [0, 1]")
    extra = np.asarray([0.0, 1.0] if support is None else support, dtype=np.float64).ravel()
    if not np.all((extra >= 0.0) & (extra <= 1.0)):
        raise ValueError("support values must lie in [0, 1]")
    # Round so that 1/3 computed two different ways lands in one class.
    values = np.unique(np.round(np.concatenate([s, extra, [0.0, 1.0]]), 12))
    counts = np.zeros(values.size)
    np.add.at(counts, np.searchsorted(values, np.round(s, 12)), 1.0)
    return values, counts


@dataclass(frozen=True, slots=True)
class SprtResult:
    llr: float
    lower: float
    upper: float
    decision: Decision
    elo0: float
    elo1: float
    model: Model
    samples: float
    estimate: EloEstimate

    def __str__(self) -> str:
        return (
            f"LLR {self.llr:.2f} ({self.lower:.2f}, {self.upper:.2f}) [{self.elo0}, {self.elo1}]"
            f" {self.model}: {self.decision}; Elo {self.estimate}"
        )


@dataclass(frozen=True, slots=True)
class Sprt:
    """A configured test: hypotheses, error rates and Elo model, applied to count data.

    H0: the true (logistic or normalised) Elo is ``elo0``; H1: it is ``elo1``. ``alpha`` is
    the chance of accepting H1 when H0 holds, ``beta`` of accepting H0 when H1 holds.
    """

    elo0: float
    elo1: float
    alpha: float = 0.05
    beta: float = 0.05
    model: Model = "logistic"

    def __post_init__(self) -> None:
        _check_errors(self.alpha, self.beta)
        if not (math.isfinite(self.elo0) and math.isfinite(self.elo1)):
            raise ValueError("elo0 and elo1 must be finite")
        if self.elo0 >= self.elo1:
            raise ValueError(f"elo0 must be below elo1, got [{self.elo0}, {self.elo1}]")
        if self.model not in ("logistic", "normalized"):
            raise ValueError(f"model must be 'logistic' or 'normalized', got {self.model!r}")

    @property
    def lower(self) -> float:
        return sprt_bounds(self.alpha, self.beta)[0]

    @property
    def upper(self) -> float:
        return sprt_bounds(self.alpha, self.beta)[1]

    def decide(self, value: float) -> Decision:
        """Wald's rule: stop at either bound (inclusive), otherwise keep playing."""
        if value >= self.upper:
            return Decision.H1
        if value <= self.lower:
            return Decision.H0
        return Decision.CONTINUE

    def distribution(
        self, values: ArrayLike, counts: ArrayLike, *, games_per_sample: float = 1.0
    ) -> SprtResult:
        """Test an empirical distribution of per-sample scores (the general form)."""
        value = llr(
            values,
            counts,
            self.elo0,
            self.elo1,
            model=self.model,
            games_per_sample=games_per_sample,
        )
        estimate = elo_from_distribution(values, counts, games_per_sample=games_per_sample)
        return SprtResult(
            value,
            self.lower,
            self.upper,
            self.decide(value),
            self.elo0,
            self.elo1,
            self.model,
            estimate.samples,
            estimate,
        )

    def trinomial(self, wins: float, losses: float, draws: float) -> SprtResult:
        return self.distribution(TRINOMIAL_VALUES, [losses, draws, wins])

    def pentanomial(self, counts: Sequence[float]) -> SprtResult:
        if len(counts) != 5:
            raise ValueError(f"pentanomial counts need 5 entries, got {len(counts)}")
        return self.distribution(PENTANOMIAL_VALUES, counts, games_per_sample=2.0)

    def scores(
        self,
        scores: ArrayLike,
        *,
        games_per_sample: float = 1.0,
        support: ArrayLike | None = None,
        adjusted: bool = False,
    ) -> SprtResult:
        """Test per-sample mean scores, e.g. one value per duplicate set (``adjusted``:
        luck-adjusted ones, see :func:`scores_distribution`)."""
        values, counts = scores_distribution(scores, support, adjusted=adjusted)
        return self.distribution(values, counts, games_per_sample=games_per_sample)


def _check_errors(alpha: float, beta: float) -> None:
    if not (0.0 < alpha < 1.0 and 0.0 < beta < 1.0 and alpha + beta < 1.0):
        raise ValueError(
            f"alpha and beta must be in (0, 1) with alpha + beta < 1, got {alpha}, {beta}"
        )


def _distribution(values: ArrayLike, counts: ArrayLike) -> tuple[FloatArray, FloatArray, float]:
    vals = np.asarray(values, dtype=np.float64)
    cnts = np.asarray(counts, dtype=np.float64)
    if vals.ndim != 1 or cnts.shape != vals.shape or vals.size < 2:
        raise ValueError("values and counts must be 1-D arrays of equal length (at least 2)")
    if not np.all(np.isfinite(cnts)) or np.any(cnts < 0):
        raise ValueError(f"counts must be finite and non-negative, got {cnts.tolist()}")
    # Luck-adjusted scores may leave [0, 1] a little; the hypotheses' means stay inside
    # (0 and 1 are always among the values), which is all the constrained MLE needs.
    if not np.all(np.isfinite(vals)) or np.any(np.diff(vals) <= 0):
        raise ValueError("values must be strictly increasing finite scores")
    if cnts.sum() <= 0:
        raise ValueError("all counts are zero: there is nothing to test yet")
    cnts = np.where(cnts == 0, REGULARIZATION, cnts)
    total = float(cnts.sum())
    return vals, cnts / total, total


def _solve_secular(a: FloatArray, p: FloatArray) -> float:
    """Root of ``f(x) = sum_i p_i a_i / (1 + x a_i)`` between its two poles.

    ``f`` decreases from +inf (at ``x = -1/max a``) to -inf (at ``x = -1/min a``), so the
    root is unique; Newton steps inside a shrinking bisection bracket find it to machine
    precision without the failure modes of unguarded Newton near a pole.
    """
    lo_a, hi_a = float(a.min()), float(a.max())
    if not lo_a < 0.0 < hi_a:
        raise ValueError(
            "the hypothesis lies outside the observed scores; widen the support of the data"
        )
    lo, hi = -1.0 / hi_a, -1.0 / lo_a
    x = 0.0
    for _ in range(400):
        d = 1.0 + x * a
        f = float(np.sum(p * a / d))
        if f == 0.0:
            return x
        if f > 0.0:
            lo = x
        else:
            hi = x
        fp = -float(np.sum(p * a * a / (d * d)))
        newton = x - f / fp
        x = newton if lo < newton < hi else 0.5 * (lo + hi)
        if hi - lo <= 1e-15 * max(1.0, abs(x)):
            break
    return x


def _mle_mean(values: FloatArray, phat: FloatArray, s: float) -> FloatArray:
    """Closest distribution (in likelihood) to ``phat`` on ``values`` whose mean is ``s``.

    Lagrange conditions give ``p_i = phat_i / (1 + x (a_i - s))`` with ``x`` solving the
    secular equation ``sum phat_i (a_i - s) / (1 + x (a_i - s)) = 0``.
    """
    shifted = values - s
    x = _solve_secular(shifted, phat)
    result: FloatArray = phat / (1.0 + x * shifted)
    return result


def _mle_t_value(values: FloatArray, phat: FloatArray, ref: float, t: float) -> FloatArray:
    """Closest distribution to ``phat`` whose t-value ``(mean - ref) / sigma`` equals ``t``.

    Fixed-point iteration from the uniform distribution (Van den Bergh, section 4.1): with
    the current mean and sigma the constraint is linearised into a secular equation of the
    same shape as for the mean.
    """
    p = np.full(values.size, 1.0 / values.size)
    for _ in range(1000):
        mu = float(np.dot(p, values))
        sigma = math.sqrt(float(np.dot(p, (values - mu) ** 2)))
        phi = values - ref - 0.5 * t * sigma * (1.0 + ((mu - values) / sigma) ** 2)
        x = _solve_secular(phi, phat)
        new = phat / (1.0 + x * phi)
        change = float(np.max(np.abs(new - p)))
        p = new
        if change < 1e-13:
            break
    return p
