"""Training the luck model: games of the arena's own bots, then three small fits.

Everything is seeded: the training games are dealt from ``TRAIN_NAMESPACE/...`` seeds,
which no tournament or benchmark derives (their seeds are SHA-256 or HMAC digests, or the
benchmark's own namespace), so the model never sees a game it will later correct. The same
options give the same games, the same weights and so the same digest on any machine.

The fits, in order:

1. ``beta``: each place at the table gets a ridge regression of a seat's score change in a
   deal on its centred card features (a redeal changes nothing);
2. ``theta``: a logistic regression of the final pairwise result on the antisymmetric
   state basis, one sample per deal and seat pair (scipy's L-BFGS);
3. ``lam``: the multiple of the resulting luck that best predicts the results of games held
   out of fits 1 and 2 (least squares, clipped to [0, 2]).
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import minimize

from arena.engine import Rules
from arena.ratings.luck.features import DealShape, FloatArray, feature_set
from arena.ratings.luck.model import (
    MODEL_FORMAT,
    MODEL_VERSION,
    STATE_NAMES,
    DealLog,
    LuckModel,
    seat_pairs,
    state_basis,
)

TRAIN_NAMESPACE = "luck-train"
CAUTIOUS = "arena.server.builtin_remote:CautiousGreedyBot"
#: Tables of the training games, drawn in turn: the arena's plain bots and their mixes.
TABLES: tuple[tuple[str, ...], ...] = (
    ("greedy", "greedy", "greedy"),
    ("greedy", CAUTIOUS, "greedy"),
    (CAUTIOUS, "greedy", CAUTIOUS),
    ("greedy", CAUTIOUS, "random"),
)
#: Deal limits of the training games, drawn in turn (None: play to the target).
LIMITS: tuple[int | None, ...] = (None, None, 12, 20, None, 30, 8, None)


@dataclass(frozen=True)
class TrainingGame:
    """What training keeps of one game: its deals and its final ranks."""

    log: DealLog
    ranks: tuple[int, ...]


def slim_replay(replay: dict[str, Any]) -> dict[str, Any]:
    """The parts of a replay the luck model reads (no actions): small to send between
    processes."""
    keep = ("index", "dealer", "deck", "scores", "redeal")
    return {
        "rules": replay["rules"], "seed": replay.get("seed", ""),
        "deals": [{k: d[k] for k in keep if k in d} for d in replay.get("deals", [])],
    }


def game_spec(index: int, preset: str) -> tuple[dict[str, Any], tuple[str, ...], int | None, str]:
    table = TABLES[index % len(TABLES)]
    limit = LIMITS[(index // len(TABLES)) % len(LIMITS)]
    seed = f"{TRAIN_NAMESPACE}/{preset}/{index}"
    return {"preset": preset, "options": {}}, table, limit, seed


def play_training_game(index: int, preset: str) -> tuple[dict[str, Any], tuple[int, ...]]:
    """Play training game ``index`` through the referee with in-process bots: its slim
    replay and final ranks."""
    from arena.match.types import MatchSpec
    from arena.referee.runner import run_match_sync

    rules, bots, limit, seed = game_spec(index, preset)
    spec = MatchSpec(
        match_id=hashlib.sha256(seed.encode()).hexdigest()[:32],
        rules=rules, seed=seed, bots=bots, max_deals=limit,
    )
    result = run_match_sync(spec)
    assert result.replay is not None
    return slim_replay(result.replay), tuple(int(r) for r in result.ranks)


def _training_game(item: tuple[dict[str, Any], tuple[int, ...]]) -> TrainingGame:
    return TrainingGame(DealLog.from_replay(item[0]), item[1])


def play_training_games(games: int, preset: str, *, jobs: int = 2, first: int = 0,
                        on_progress: Callable[[int], None] | None = None) -> list[TrainingGame]:
    indices = range(first, first + games)
    if jobs <= 1:
        out = []
        for i in indices:
            out.append(_training_game(play_training_game(i, preset)))
            if on_progress:
                on_progress(len(out))
        return out
    with cf.ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(play_training_game, i, preset) for i in indices]
        out = []
        for f in futures:
            out.append(_training_game(f.result()))
            if on_progress:
                on_progress(len(out))
        return out


def pair_results(ranks: Sequence[int]) -> FloatArray:
    """Seat a's score against seat b for each pair: 1 ahead, 0.5 level, 0 behind."""
    return np.array([1.0 if ranks[a] < ranks[b] else 0.5 if ranks[a] == ranks[b] else 0.0
                     for a, b in seat_pairs(len(ranks))])


def _state_arrays(model_shape: DealShape, game: TrainingGame) -> tuple[FloatArray, ...]:
    log = game.log
    rules = log.rules
    x = log.scores_before / float(rules.target)
    limited = np.full(len(x), 1.0 if rules.max_deals is not None else 0.0)
    left = np.maximum(0.0, (rules.max_deals or 0) - log.indices - 1.0).astype(np.float64)
    return x, log.dealers.astype(np.float64), left, limited


def fit_beta(shape: DealShape, games: Sequence[TrainingGame], ridge: float = 1.0) -> FloatArray:
    fs = feature_set(shape)
    n = shape.active
    xtx = np.zeros((n, fs.size, fs.size))
    xty = np.zeros((n, fs.size))
    for g in games:
        log = g.log
        from arena.ratings.luck.features import deck_owner

        phi = fs.values(deck_owner(shape, log.decks)) - fs.means  # (deals, role, F)
        target = float(log.rules.target)
        for r in range(n):
            seat = (log.dealers + 1 + r) % n
            y = log.deltas[np.arange(len(seat)), seat] / target
            xtx[r] += phi[:, r, :].T @ phi[:, r, :]
            xty[r] += phi[:, r, :].T @ y
    beta = np.empty((n, fs.size))
    for r in range(n):
        beta[r] = np.linalg.solve(xtx[r] + ridge * np.eye(fs.size), xty[r])
    return beta


def _basis_rows(shape: DealShape, games: Sequence[TrainingGame]) -> tuple[FloatArray, FloatArray]:
    n = shape.players
    pairs = seat_pairs(n)
    rows: list[FloatArray] = []
    ys: list[FloatArray] = []
    for g in games:
        x, dealer, left, limited = _state_arrays(shape, g)
        if not len(x):
            continue
        role = (np.arange(n)[None, :] - dealer[:, None].astype(np.int64) - 1) % n
        y = pair_results(g.ranks)
        for i, (a, b) in enumerate(pairs):
            third = next((s for s in range(n) if s not in (a, b)), None)
            xc = x[:, third] if third is not None else np.zeros(len(x))
            rows.append(state_basis(x[:, a], x[:, b], xc, role[:, a], role[:, b], left, limited))
            ys.append(np.full(len(x), y[i]))
    return np.concatenate(rows), np.concatenate(ys)


def fit_theta(shape: DealShape, games: Sequence[TrainingGame], l2: float = 1e-3) -> FloatArray:
    basis, y = _basis_rows(shape, games)
    m = len(y)

    def loss(theta: FloatArray) -> tuple[float, FloatArray]:
        z = basis @ theta
        # Soft-target logistic loss: ties (y = 0.5) count half each way.
        lse = np.logaddexp(0.0, z)
        value = float(np.sum(lse - y * z) / m + 0.5 * l2 * theta @ theta)
        p = 1.0 / (1.0 + np.exp(-z))
        grad = basis.T @ (p - y) / m + l2 * theta
        return value, grad

    res = minimize(loss, np.zeros(basis.shape[1]), jac=True, method="L-BFGS-B",
                   options={"maxiter": 2000})
    theta: FloatArray = res.x
    return theta


def fit_lambda(model: LuckModel, games: Sequence[TrainingGame]) -> float:
    num = den = 0.0
    for g in games:
        if not len(g.log.indices):
            continue
        luck = model.deal_luck(g.log).sum(axis=0)  # with lam = 1
        y = pair_results(g.ranks)
        num += float(np.sum((y - 0.5) * luck))
        den += float(np.sum(luck * luck))
    if den <= 0:
        return 1.0
    return float(np.clip(num / den, 0.0, 2.0))


def build_model(shape: DealShape, theta: FloatArray, beta: FloatArray, lam: float,
                meta: dict[str, Any]) -> LuckModel:
    fs = feature_set(shape)
    full = {
        "format": MODEL_FORMAT,
        "version": MODEL_VERSION,
        "shape": {"players": shape.players, "deck": shape.deck, "hand_size": shape.hand_size,
                  "talon_size": shape.talon_size, "talons": shape.talons,
                  "dealer_sits_out": shape.dealer_sits_out},
        "features": hashlib.sha256("\n".join(fs.names).encode()).hexdigest()[:16],
        "state": hashlib.sha256("\n".join(STATE_NAMES).encode()).hexdigest()[:16],
        **meta,
    }
    return LuckModel({"theta": theta, "beta": beta, "lam": np.array(lam)}, full)


def train(preset: str, games: int, *, jobs: int = 2, holdout: float = 0.2,
          on_progress: Callable[[str], None] | None = None) -> LuckModel:
    """Play ``games`` training games and fit a model for the preset's deal shape."""
    say = on_progress or (lambda _text: None)
    rules = Rules.preset(preset)
    shape = DealShape.of(rules)
    started = time.monotonic()
    step = max(1, games // 20)

    def progress(done: int) -> None:
        if done % step == 0 or done == games:
            say(f"played {done}/{games} training games ({time.monotonic() - started:.0f}s)")

    played = play_training_games(games, preset, jobs=jobs, on_progress=progress)
    play_s = time.monotonic() - started
    cut = round(len(played) * (1.0 - holdout))
    fit_part, held = played[:cut], played[cut:]
    beta = fit_beta(shape, fit_part)
    theta = fit_theta(shape, fit_part)
    unit = build_model(shape, theta, beta, 1.0, {})
    lam = fit_lambda(unit, held)
    meta = {
        "preset": preset,
        "training": {"games": games, "seeds": f"{TRAIN_NAMESPACE}/{preset}/0..{games - 1}",
                     "holdout": holdout, "tables": [list(t) for t in TABLES],
                     "deal_limits": list(LIMITS)},
    }
    model = build_model(shape, theta, beta, lam, meta)
    say(f"fitted in {time.monotonic() - started - play_s:.0f}s after {play_s:.0f}s of play; "
        f"lam {lam:.3f}; model {model.short}")
    return model
