"""Training the luck model: games of the arena's own bots, then two least-squares fits.

Everything is seeded: the training games are dealt from ``TRAIN_NAMESPACE/...`` seeds,
which no tournament or benchmark derives (their seeds are SHA-256 or HMAC digests, or the
benchmark's own namespace), so the model never sees a game it will later correct. The same
options give the same games on any machine. The fits do not: BLAS and LAPACK round
differently from one processor to the next (in the 12th digit), so the weights are
rounded to a fixed grid (:func:`frozen`) before the digest names them, and the same
options give the same weights and digest on any machine.

The fits, in order:

1. ``beta``: for each place at the table and each deal value, a ridge regression on the
   centred card features of a seat's points in the deal (capped at +-250: a fall off the
   barrel is not the cards' doing) and of whether the deal brought it 120 or more;
2. ``gamma``: a ridge regression of the final pairwise result on the deal values times the
   state features, one row per deal and seat pair, on games held out of fit 1.
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from arena.engine import Rules
from arena.ratings.luck.features import DealShape, FloatArray, deck_owner, feature_set
from arena.ratings.luck.model import (
    MODEL_FORMAT,
    MODEL_VERSION,
    STATE_NAMES,
    VALUES,
    DealLog,
    LuckModel,
    seat_pairs,
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


def fit_beta(shape: DealShape, games: Sequence[TrainingGame], ridge: float = 1.0) -> FloatArray:
    fs = feature_set(shape)
    n = shape.active
    xtx = np.zeros((n, fs.size, fs.size))
    xty = np.zeros((len(VALUES), n, fs.size))
    for g in games:
        log = g.log
        phi = fs.values(deck_owner(shape, log.decks)) - fs.means  # (deals, role, F)
        target = float(log.rules.target)
        for r in range(n):
            seat = (log.dealers + 1 + r) % n
            delta = log.deltas[np.arange(len(seat)), seat]
            ys = (np.clip(delta, -250.0, 250.0) / target, (delta >= 120.0).astype(np.float64),
                  (delta <= -100.0).astype(np.float64))
            xtx[r] += phi[:, r, :].T @ phi[:, r, :]
            for v, y in enumerate(ys):
                xty[v, r] += phi[:, r, :].T @ y
    beta = np.empty((len(VALUES), n, fs.size))
    for r in range(n):
        inv = np.linalg.inv(xtx[r] + ridge * np.eye(fs.size))
        for v in range(len(VALUES)):
            beta[v, r] = inv @ xty[v, r]
    return beta


def fit_gamma(model: LuckModel, games: Sequence[TrainingGame], ridge: float = 1e-3) -> FloatArray:
    size = model.gamma.size
    xtx = np.zeros((size, size))
    xty = np.zeros(size)
    for g in games:
        log = g.log
        if not len(log.indices):
            continue
        x = model.design(log, model.deal_values(log.decks, log.dealers)).reshape(-1, size)
        y = np.tile(pair_results(g.ranks) - 0.5, len(log.indices))
        xtx += x.T @ x
        xty += x.T @ y
    gamma = np.linalg.solve(xtx + ridge * len(games) * np.eye(size), xty)
    out: FloatArray = np.asarray(gamma, dtype=np.float64).reshape(model.gamma.shape)
    return out


#: The grid the fitted weights are rounded to: 2**-20, about 1e-6, against weights of order
#: 0.1 that fits on different processors give to within about 1e-11.
WEIGHT_GRID = 2.0**-20


def frozen(weights: FloatArray) -> FloatArray:
    """Fitted weights rounded to :data:`WEIGHT_GRID`, so that the last bits a processor's
    BLAS leaves in a fit do not change the model's digest. Two fits differing by 1e-11 round
    apart only when a weight lies within 1e-11 of a grid step: about one chance in 100,000 a
    weight, under 1% for the 948 weights of the classic model. The rounding moves a deal's luck by
    less than 1e-4 and leaves it unbiased (any fixed weights do)."""
    out: FloatArray = np.round(np.asarray(weights, dtype=np.float64) / WEIGHT_GRID) * WEIGHT_GRID
    return out


def build_model(shape: DealShape, beta: FloatArray, gamma: FloatArray,
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
    return LuckModel({"beta": beta, "gamma": gamma}, full)


def train(preset: str, games: int, *, jobs: int = 2, holdout: float = 0.5,
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
    beta = frozen(fit_beta(shape, fit_part))
    unit = build_model(shape, beta, np.zeros((len(VALUES), 2, len(STATE_NAMES))), {})
    gamma = frozen(fit_gamma(unit, held))
    meta = {
        "preset": preset,
        "training": {"games": games, "seeds": f"{TRAIN_NAMESPACE}/{preset}/0..{games - 1}",
                     "holdout": holdout, "tables": [list(t) for t in TABLES],
                     "deal_limits": list(LIMITS)},
    }
    model = build_model(shape, beta, gamma, meta)
    say(f"fitted in {time.monotonic() - started - play_s:.0f}s after {play_s:.0f}s of play; "
        f"model {model.short}")
    return model
