"""Batch Bradley-Terry ratings on the Elo scale, with bootstrap confidence intervals.

Model: player i scores against j with probability ``1 / (1 + exp(-(t_i - t_j)))``; the Elo
rating is ``t * 400 / ln 10``. Multiplayer games enter as their pairwise comparisons by final
rank (tie = half a point each), which is the standard way to rate rankings with a pairwise
model and keeps the scale comparable with two-player Elo.

Why these choices:

* Newton's method, batched over bootstrap replicates: with tens of players the Hessian is
  tiny, convergence takes a handful of iterations, and numpy solves all replicates at once.
  (MM iterations need hundreds of passes for the same precision.)
* Bootstrap over *groups*, not games: games in a duplicate set share their deals, so
  resampling games would pretend to have several times more independent data than exists
  and give intervals that are far too narrow.
* An optional weak prior (virtual draws): a player who won or lost everything has an
  infinite maximum-likelihood rating, and bootstrap replicates produce such records often
  even when the full data does not. The prior keeps every rating finite. It is off by
  default here so that a fit reproduces the textbook MLE exactly; :func:`ratings_table`
  turns it on because a leaderboard must always render.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from arena.ratings.data import FloatArray, GameResult, GameTable, PairData
from arena.ratings.elo import ELO_PER_NAT, elo_to_score

_MAX_STEP = 2.0
"""Largest Newton step in natural units (~350 Elo): guards the first steps when ratings are
far apart; converged fits never come near it."""

_CHUNK = 128
"""Bootstrap replicates solved together: bounds memory, keeps numpy's batched solve busy."""


@dataclass(frozen=True, eq=False)
class BradleyTerryFit:
    """Ratings (Elo scale) and percentile bootstrap intervals, aligned with ``players``.

    ``ci_low``/``ci_high`` are NaN when no bootstrap was requested. ``bootstrap_ratings``
    keeps every replicate (shape ``(n_bootstrap, n_players)``) so callers can derive other
    figures, e.g. how often A out-rated B.
    """

    players: tuple[str, ...]
    ratings: FloatArray
    ci_low: FloatArray
    ci_high: FloatArray
    bootstrap_ratings: FloatArray | None
    anchor: str | None
    prior_draws: float
    confidence: float
    seed: int
    n_groups: int

    def _index(self, player: str) -> int:
        try:
            return self.players.index(player)
        except ValueError:
            raise ValueError(f"unknown player {player!r}") from None

    def rating(self, player: str) -> float:
        return float(self.ratings[self._index(player)])

    def interval(self, player: str) -> tuple[float, float]:
        i = self._index(player)
        return float(self.ci_low[i]), float(self.ci_high[i])

    def expected_score(self, player: str, opponent: str) -> float:
        """Predicted pairwise score of ``player`` against ``opponent`` under the fit."""
        return elo_to_score(self.rating(player) - self.rating(opponent))

    def to_dict(self) -> dict[str, dict[str, float]]:
        """Plain mapping player -> {rating, ci_low, ci_high}, e.g. for JSON output."""
        return {
            p: {
                "rating": float(self.ratings[i]),
                "ci_low": float(self.ci_low[i]),
                "ci_high": float(self.ci_high[i]),
            }
            for i, p in enumerate(self.players)
        }


def fit_bradley_terry(
    data: Iterable[GameResult] | GameTable | PairData,
    *,
    anchor: str | None = None,
    prior_draws: float = 0.0,
    n_bootstrap: int = 0,
    confidence: float = 0.95,
    seed: int = 0,
) -> BradleyTerryFit:
    """Fit Bradley-Terry ratings; optionally bootstrap groups for confidence intervals.

    ``anchor=None`` centres the ratings on mean 0; a player name pins that player at 0
    (its interval is then [0, 0] and the others' intervals are relative to it).
    ``prior_draws`` gives every player that many virtual draws in total, spread evenly over
    all other players; it shrinks ratings towards each other and guarantees finite values.
    Bootstrap replicates draw ``n_groups`` groups with replacement from
    ``numpy.random.Generator(PCG64(seed))``, so the same seed gives the same intervals.

    Raises ValueError when ``prior_draws == 0`` and the ratings are unbounded (someone won
    or lost everything, or the players split into camps that never met), in the full data
    or in a bootstrap replicate.
    """
    pairs = PairData.of(data)
    if not (math.isfinite(prior_draws) and prior_draws >= 0.0):
        raise ValueError(f"prior_draws must be a finite number >= 0, got {prior_draws}")
    if isinstance(n_bootstrap, bool) or not isinstance(n_bootstrap, int) or n_bootstrap < 0:
        raise ValueError(f"n_bootstrap must be an integer >= 0, got {n_bootstrap!r}")
    if n_bootstrap == 1:
        raise ValueError("n_bootstrap must be 0 (no intervals) or at least 2")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    anchor_idx: int | None = None
    if anchor is not None:
        if anchor not in pairs.players:
            raise ValueError(f"anchor {anchor!r} is not one of the players")
        anchor_idx = pairs.players.index(anchor)

    wins, games = pairs.totals()
    if prior_draws == 0.0:
        _require_finite_mle(wins[None], pairs.players, "the results")
    theta = solve_bradley_terry(wins[None], games[None], prior_draws=prior_draws)
    ratings = _anchor(theta, anchor_idx)[0] * ELO_PER_NAT

    p = pairs.n_players
    ci_low = np.full(p, np.nan)
    ci_high = np.full(p, np.nan)
    samples: FloatArray | None = None
    if n_bootstrap:
        samples = _bootstrap(pairs, n_bootstrap, seed, prior_draws, anchor_idx)
        tail = (1.0 - confidence) / 2.0
        ci_low, ci_high = np.quantile(samples, [tail, 1.0 - tail], axis=0)
    return BradleyTerryFit(
        players=pairs.players,
        ratings=ratings,
        ci_low=ci_low,
        ci_high=ci_high,
        bootstrap_ratings=samples,
        anchor=anchor,
        prior_draws=prior_draws,
        confidence=confidence,
        seed=seed,
        n_groups=pairs.n_groups,
    )


def solve_bradley_terry(
    wins: FloatArray,
    games: FloatArray,
    *,
    prior_draws: float = 0.0,
    tol: float = 1e-10,
    max_iter: int = 200,
) -> FloatArray:
    """Maximum-likelihood strengths (natural units, mean 0) for a batch of score matrices.

    ``wins[b, i, j]`` is what i scored against j in replicate b and ``games[b, i, j]`` how
    often they met (symmetric). This is the numeric core; it assumes the MLE exists (see
    :func:`fit_bradley_terry` for the check) and returns shape ``(batch, n_players)``.

    Newton step: gradient ``g_i = sum_j W_ij - N_ij p_ij``; the negative Hessian is the
    graph Laplacian with weights ``N_ij p_ij (1 - p_ij)``. It is singular along the all-ones
    direction (adding a constant changes nothing), so we solve with ``L + 11^T/n`` instead:
    since ``g`` sums to zero, the solution is the minimum-norm step, which keeps the mean 0.
    """
    w = np.array(wins, dtype=np.float64, copy=True)
    n = np.array(games, dtype=np.float64, copy=True)
    if w.ndim != 3 or w.shape != n.shape or w.shape[1] != w.shape[2]:
        raise ValueError("wins and games must both have shape (batch, n_players, n_players)")
    batch, p, _ = w.shape
    # Luck-adjusted totals can leave [0, N] where a pair is (nearly) one-sided; such a pair
    # bounds nothing either way, exactly like a raw total of 0 or N, and is solved as one.
    np.clip(w, 0.0, n, out=w)
    if prior_draws > 0.0:
        off = 1.0 - np.eye(p)
        per_pair = prior_draws / (p - 1)
        n += per_pair * off
        w += 0.5 * per_pair * off
    theta = np.zeros((batch, p))
    diag = np.arange(p)
    for _ in range(max_iter):
        diff = np.clip(theta[:, :, None] - theta[:, None, :], -700.0, 700.0)
        prob = 1.0 / (1.0 + np.exp(-diff))
        grad = (w - n * prob).sum(axis=2)
        weight = n * prob * (1.0 - prob)
        lap = -weight
        lap[:, diag, diag] = weight.sum(axis=2) - weight[:, diag, diag]
        lap += 1.0 / p
        step = np.linalg.solve(lap, grad[:, :, None])[:, :, 0]
        size = np.abs(step).max(axis=1)
        scale = np.minimum(1.0, _MAX_STEP / np.maximum(size, 1e-300))
        theta += step * scale[:, None]
        if float(size.max()) < tol:
            break
    else:
        raise RuntimeError(
            f"Bradley-Terry Newton iterations did not converge in {max_iter} steps; "
            "use prior_draws > 0 if some ratings are nearly unbounded"
        )
    result: FloatArray = theta - theta.mean(axis=1, keepdims=True)
    return result


def _bootstrap(
    pairs: PairData,
    n_bootstrap: int,
    seed: int,
    prior_draws: float,
    anchor_idx: int | None,
) -> FloatArray:
    rng = np.random.Generator(np.random.PCG64(seed))
    n_groups = pairs.n_groups
    p = pairs.n_players
    samples = np.empty((n_bootstrap, p))
    for start in range(0, n_bootstrap, _CHUNK):
        size = min(_CHUNK, n_bootstrap - start)
        wins = np.empty((size, p, p))
        games = np.empty((size, p, p))
        for k in range(size):
            drawn = rng.integers(0, n_groups, size=n_groups)
            counts = np.bincount(drawn, minlength=n_groups).astype(np.float64)
            wins[k], games[k] = pairs.totals(counts)
        if prior_draws == 0.0:
            _require_finite_mle(wins, pairs.players, "a bootstrap replicate")
        theta = solve_bradley_terry(wins, games, prior_draws=prior_draws)
        samples[start : start + size] = _anchor(theta, anchor_idx) * ELO_PER_NAT
    return samples


def _anchor(theta: FloatArray, anchor_idx: int | None) -> FloatArray:
    ref = theta.mean(axis=1, keepdims=True) if anchor_idx is None else theta[:, [anchor_idx]]
    anchored: FloatArray = theta - ref
    return anchored


def _require_finite_mle(wins: FloatArray, players: tuple[str, ...], where: str) -> None:
    """Raise unless every replicate's "scored against" graph is strongly connected.

    That is the exact condition (Zermelo; Hunter 2004, Assumption 1) for the MLE to exist:
    if some set of players never scored a point against the rest, pushing them down
    forever keeps increasing the likelihood.
    """
    p = len(players)
    reach = ((wins > 0) | np.eye(p, dtype=bool)).astype(np.float64)
    for _ in range(max(1, math.ceil(math.log2(p)))):
        reach = np.minimum(reach @ reach, 1.0)
    ok = reach.min(axis=(1, 2)) > 0
    if bool(ok.all()):
        return
    bad = int(np.argmin(ok))
    w = wins[bad]
    played = (w + w.T).sum(axis=1) > 0
    unbeaten = [players[i] for i in range(p) if played[i] and w[:, i].sum() == 0]
    pointless = [players[i] for i in range(p) if played[i] and w[i].sum() == 0]
    absent = [players[i] for i in range(p) if not played[i]]
    detail = []
    if unbeaten:
        detail.append(f"never conceded a point: {', '.join(unbeaten)}")
    if pointless:
        detail.append(f"never scored: {', '.join(pointless)}")
    if absent:
        detail.append(f"no games: {', '.join(absent)}")
    reason = "; ".join(detail) or "the players split into groups that never scored on each other"
    raise ValueError(
        f"Bradley-Terry ratings are unbounded for {where} ({reason}). "
        "Pass prior_draws > 0 (e.g. 1.0) to add a weak prior of virtual draws."
    )
