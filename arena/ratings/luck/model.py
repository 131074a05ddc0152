"""The luck model: a frozen value function and the correction it gives a finished game.

Two small parts, both fitted by ``arena ratings train-luck`` on games of the arena's own
bots and shipped as numpy arrays:

* the **state value** ``W_ab(x)``: the chance that seat a finishes ahead of seat b (ties
  half), from the scores before a deal, the seats' places relative to the dealer and the
  deals left; a logistic model on a fixed basis that is antisymmetric by construction
  (``W_ab = 1 - W_ba``);
* the **deal value** ``e_s(deck)``: the points a seat can expect from a deal, linear in
  the card features of :mod:`arena.ratings.luck.features`, one weight vector per place at
  the table.

The value of the state after a deal is dealt is ``V_ab = W_ab(x) + lam * sum_s dW_ab/dx_s *
(e_s(deck) - E[e_s])``, the first-order effect of the deal's expected points on the
pairwise result. Its mean over fresh shuffles is ``W_ab(x)``, exactly, because ``e`` is
linear in features whose means are known in closed form; so the luck of a deal is
``V_ab(after the shuffle) - E[V_ab] = lam * sum_s dW_ab/dx_s * (e_s(deck) - E[e_s])`` and a
game's luck is the sum over its deals. See ``docs/ratings.md`` for why subtracting it leaves
every expected result unchanged.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from arena.engine import EngineError, Rules
from arena.engine.cards import CARD_NAMES
from arena.engine.shuffle import deal_seed, shuffled
from arena.ratings.luck.features import (
    DealShape,
    FeatureSet,
    FloatArray,
    IntArray,
    deck_owner,
    feature_set,
)

MODEL_FORMAT = "thousand-luck-model"
MODEL_VERSION = 1
#: Knots of the piecewise-linear part of the state basis, in fractions of the target.
KNOTS = (0.5, 0.7, 0.8, 0.88, 0.95)
_FD_STEP = 1e-3
#: Card names as replays write them (``TH``; ``10H`` too) -> engine card numbers.
_CARD = {**{name: i for i, name in enumerate(CARD_NAMES)},
         **{name.replace("T", "10"): i for i, name in enumerate(CARD_NAMES) if name[0] == "T"}}


def seat_pairs(n: int) -> list[tuple[int, int]]:
    """The seat pairs of an n-seat game in the order luck values are stored: (0, 1), (0, 2),
    ..., (1, 2), ...: the same order as the pairwise results of the ratings."""
    return [(a, b) for a in range(n) for b in range(a + 1, n)]


def _h(x: FloatArray) -> FloatArray:
    """Basis of one seat's score (fraction of the target): cubic plus hinges near the end."""
    cols = [x, x * x, x * x * x] + [np.maximum(x - k, 0.0) for k in KNOTS]
    return np.stack(cols, axis=-1)


STATE_NAMES = (
    *(f"d{n}" for n in ("x", "x2", "x3", *(f"k{k}" for k in KNOTS))),
    *(f"third*d{n}" for n in ("x", "x2", "x3", *(f"k{k}" for k in KNOTS))),
    "role0", "role1", "role2",
    "limited*dx", "limited*dx/sqrt(left)",
    *(f"limited*d{n}/sqrt(left)" for n in ("x", "x2", "x3", *(f"k{k}" for k in KNOTS))),
)


def state_basis(
    xa: FloatArray, xb: FloatArray, xc: FloatArray, ra: IntArray, rb: IntArray,
    left: FloatArray, limited: FloatArray,
) -> FloatArray:
    """Antisymmetric features of the pair (a, b): swapping a and b negates every one.

    ``x*`` are the scores of a, b and the third seat as fractions of the target, ``r*``
    the places of a and b after the dealer (0 = forehand), ``left`` the deals left after
    this one and ``limited`` 1 when the game has a deal limit.
    """
    d = _h(xa) - _h(xb)
    roles = np.zeros((*xa.shape, 3))
    idx = np.indices(xa.shape)
    roles[(*idx, np.minimum(ra, 2))] += 1.0
    roles[(*idx, np.minimum(rb, 2))] -= 1.0
    u = 1.0 / np.sqrt(left + 1.0)
    lim = limited[..., None]
    return np.concatenate(
        [
            d,
            xc[..., None] * d,
            roles,
            (limited * (xa - xb))[..., None],
            (limited * (xa - xb) * u)[..., None],
            lim * d * u[..., None],
        ],
        axis=-1,
    )


@dataclass(frozen=True)
class DealLog:
    """What the luck of one game needs, read from its replay: per deal, the state before
    it (scores, dealer, number) and its deck."""

    rules: Rules
    scores_before: FloatArray  # (deals, players)
    dealers: IntArray  # (deals,)
    indices: IntArray  # (deals,)
    decks: IntArray  # (deals, deck) engine card numbers in dealing order
    #: Each deal's change of the scores (0 for a redeal), for training.
    deltas: FloatArray

    @classmethod
    def from_replay(cls, replay: Mapping[str, Any]) -> DealLog:
        """Read a replay (docs/replay.md); a deck left out is derived from the seed."""
        try:
            rules = Rules.from_json(replay["rules"])
            seed = str(replay.get("seed", ""))
            n = rules.players
            deals = list(replay.get("deals") or [])
            scores = [0.0] * n
            before: list[list[float]] = []
            deltas: list[list[float]] = []
            dealers: list[int] = []
            indices: list[int] = []
            cards: list[int] = []
            base = DealShape.of(rules).cards
            card = _CARD
            zero = [0.0] * n
            for d in deals:
                before.append(scores)
                dealers.append(int(d["dealer"]))
                indices.append(int(d["index"]))
                deck = d.get("deck")
                if deck is None:
                    cards.extend(shuffled(base, deal_seed(seed, int(d["index"]))))
                else:
                    cards.extend([card[c] for c in deck])
                after = d.get("scores")
                if after is None:
                    deltas.append(zero)
                else:
                    new = [float(v) for v in after]
                    deltas.append([a - b for a, b in zip(new, scores, strict=True)])
                    scores = new
            decks = np.array(cards, dtype=np.int64).reshape(len(deals), rules.deck)
            if len(deals) and not (np.sort(decks, axis=1) == np.array(base)).all():
                raise ValueError("a deck does not hold each card of the rules' deck once")
            shape_n = (len(deals), n)
            out = cls(rules, np.array(before, dtype=np.float64).reshape(shape_n),
                      np.array(dealers, dtype=np.int64), np.array(indices, dtype=np.int64),
                      decks, np.array(deltas, dtype=np.float64).reshape(shape_n))
        except (KeyError, TypeError, ValueError, EngineError) as exc:
            raise ValueError(f"not a replay the luck model can read: {exc}") from None
        return out


class LuckModel:
    """A frozen luck model for one deal shape; :attr:`digest` names it in every report."""

    def __init__(self, arrays: Mapping[str, FloatArray], meta: Mapping[str, Any]) -> None:
        self.meta = dict(meta)
        if self.meta.get("format") != MODEL_FORMAT or self.meta.get("version") != MODEL_VERSION:
            raise ValueError("not a luck model of this version")
        s = self.meta["shape"]
        self.shape = DealShape(int(s["players"]), int(s["deck"]), int(s["hand_size"]),
                               int(s["talon_size"]), int(s["talons"]),
                               bool(s["dealer_sits_out"]))
        self.features: FeatureSet = feature_set(self.shape)
        self.theta = np.asarray(arrays["theta"], dtype=np.float64)
        self.beta = np.asarray(arrays["beta"], dtype=np.float64)
        self.lam = float(np.asarray(arrays["lam"]).reshape(()))
        if self.theta.shape != (len(STATE_NAMES),):
            raise ValueError("luck model: the state weights do not fit the state basis")
        if self.beta.shape != (self.shape.active, self.features.size):
            raise ValueError("luck model: the deal weights do not fit the card features")
        if self.shape.dealer_sits_out or self.shape.active != self.shape.players:
            raise ValueError("luck model: only tables where every seat plays every deal")
        self.digest = _digest(self.theta, self.beta, self.lam, self.meta)

    # -- files -------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | Path) -> LuckModel:
        with np.load(Path(path), allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files if k != "meta"}
            meta = json.loads(str(data["meta"]))
        return cls(arrays, meta)

    @classmethod
    def from_bytes(cls, blob: bytes) -> LuckModel:
        with np.load(io.BytesIO(blob), allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files if k != "meta"}
            meta = json.loads(str(data["meta"]))
        return cls(arrays, meta)

    def save(self, path: str | Path) -> None:
        Path(path).write_bytes(self.to_bytes())

    def to_bytes(self) -> bytes:
        buf = io.BytesIO()
        np.savez(buf, theta=self.theta, beta=self.beta, lam=np.array(self.lam),
                 meta=np.array(json.dumps(self.meta, sort_keys=True)))
        return buf.getvalue()

    @property
    def short(self) -> str:
        """The first 12 hex digits of the digest, as reports print it."""
        return self.digest[:12]

    # -- values ------------------------------------------------------------------------

    def state_value(self, x: FloatArray, dealer: IntArray, left: FloatArray,
                    limited: FloatArray) -> FloatArray:
        """``W[k, i]`` for deals k and seat pairs i (:func:`seat_pairs`): the chance the
        first seat of the pair finishes ahead of the second."""
        return _sigmoid(self._logits(x, dealer, left, limited))

    def _logits(self, x: FloatArray, dealer: IntArray, left: FloatArray,
                limited: FloatArray) -> FloatArray:
        n = self.shape.players
        pairs = seat_pairs(n)
        a = np.array([p[0] for p in pairs])
        b = np.array([p[1] for p in pairs])
        third = np.array([next((s for s in range(n) if s not in p), -1) for p in pairs])
        xa, xb = x[:, a], x[:, b]
        xc = x[:, third] if n > 2 else np.zeros_like(xa)
        if n <= 2:
            xc = np.zeros_like(xa)
        role = (np.arange(n)[None, :] - dealer[:, None] - 1) % n
        basis = state_basis(xa, xb, xc, role[:, a], role[:, b],
                            np.broadcast_to(left[:, None], xa.shape),
                            np.broadcast_to(limited[:, None], xa.shape))
        logits: FloatArray = basis @ self.theta
        return logits

    def state_gradient(self, x: FloatArray, dealer: IntArray, left: FloatArray,
                       limited: FloatArray) -> FloatArray:
        """``G[k, i, s] = dW_i/dx_s`` by central differences (the basis is piecewise smooth),
        every shifted state evaluated in one batch."""
        n = self.shape.players
        k = x.shape[0]
        shifts = np.concatenate([_FD_STEP * np.eye(n), -_FD_STEP * np.eye(n)])  # (2n, n)
        xs = (x[None, :, :] + shifts[:, None, :]).reshape(2 * n * k, n)
        tile = 2 * n
        values = self.state_value(xs, np.tile(dealer, tile), np.tile(left, tile),
                                  np.tile(limited, tile)).reshape(2 * n, k, -1)
        out: FloatArray = ((values[:n] - values[n:]) / (2 * _FD_STEP)).transpose(1, 2, 0)
        return out

    def deal_values(self, decks: IntArray, dealer: IntArray) -> FloatArray:
        """``e[k, s]``: seat s's expected points from deal k (fraction of the target),
        centred on its mean over all shuffles."""
        n = self.shape.players
        owner = deck_owner(self.shape, decks)
        phi = self.features.values(owner) - self.features.means  # (deals, role, F)
        by_role = np.einsum("krf,rf->kr", phi, self.beta)
        seat_role = (np.arange(n)[None, :] - dealer[:, None] - 1) % n
        out: FloatArray = np.take_along_axis(by_role, seat_role, axis=1)
        return out

    def deal_luck(self, log: DealLog) -> FloatArray:
        """``L[k, i]``: the luck of deal k for seat pair i (zero mean over shuffles)."""
        rules = log.rules
        x = log.scores_before / float(rules.target)
        limited = np.full(len(x), 1.0 if rules.max_deals is not None else 0.0)
        left = np.maximum(0.0, (rules.max_deals or 0) - log.indices - 1.0).astype(np.float64)
        grad = self.state_gradient(x, log.dealers, left, limited)
        e = self.deal_values(log.decks, log.dealers)
        luck: FloatArray = self.lam * np.einsum("kis,ks->ki", grad, e)
        return luck

    def fits(self, rules: Rules) -> bool:
        return DealShape.of(rules) == self.shape

    def game_luck(self, replay: Mapping[str, Any]) -> GameLuck | None:
        """The luck of every seat pair over a finished game, or None when this model does
        not apply (another deal shape, an unreadable replay)."""
        try:
            log = DealLog.from_replay(replay)
        except ValueError:
            return None
        if not self.fits(log.rules):
            return None
        if len(log.indices) == 0:
            return GameLuck(self.short, (0.0,) * len(seat_pairs(self.shape.players)), 0)
        total = self.deal_luck(log).sum(axis=0)
        return GameLuck(self.short, tuple(float(round(v, 6)) for v in total), len(log.indices))


@dataclass(frozen=True)
class GameLuck:
    """One game's luck: for each seat pair (a, b) in :func:`seat_pairs` order, how much the
    deals alone moved a's expected pairwise score against b. The adjusted pairwise score is
    the result minus this."""

    model: str
    pairs: tuple[float, ...]
    deals: int

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "pairs": list(self.pairs), "deals": self.deals}

    @classmethod
    def from_json(cls, data: Any) -> GameLuck | None:
        if not isinstance(data, Mapping):
            return None
        try:
            pairs = tuple(float(v) for v in data["pairs"])
            if not all(math.isfinite(v) for v in pairs):
                return None
            return cls(str(data["model"]), pairs, int(data.get("deals", 0)))
        except (KeyError, TypeError, ValueError):
            return None

    def pair(self, a: int, b: int) -> float:
        """Seat a's luck against seat b (negated when a > b)."""
        if a == b:
            return 0.0
        lo, hi = min(a, b), max(a, b)
        n = 2
        while n * (n - 1) // 2 < len(self.pairs):
            n += 1
        value = self.pairs[seat_pairs(n).index((lo, hi))]
        return value if a < b else -value


def _sigmoid(z: FloatArray) -> FloatArray:
    out: FloatArray = 1.0 / (1.0 + np.exp(-np.clip(z, -40.0, 40.0)))
    return out


def _digest(theta: FloatArray, beta: FloatArray, lam: float, meta: Mapping[str, Any]) -> str:
    """SHA-256 of the weights and of what they mean (shape, features, basis), not of how
    long training took: the same weights always have the same name."""
    h = hashlib.sha256()
    h.update(MODEL_FORMAT.encode())
    for arr in (theta, beta, np.array([lam])):
        h.update(np.ascontiguousarray(arr, dtype="<f8").tobytes())
    ident = {k: meta[k] for k in ("shape", "features", "state") if k in meta}
    h.update(json.dumps(ident, sort_keys=True).encode())
    return h.hexdigest()


MODELS_PACKAGE = "arena.ratings.luck"
MODELS_DIR = "models"


def model_path(shape: DealShape) -> Path:
    """Where the shipped model of a deal shape lives in the package."""
    return Path(str(resources.files(MODELS_PACKAGE) / MODELS_DIR)) / f"{shape.key}.npz"


@lru_cache(maxsize=16)
def shipped_model(shape: DealShape) -> LuckModel | None:
    """The model shipped for ``shape`` (None when there is none)."""
    path = model_path(shape)
    if not path.is_file():
        return None
    return LuckModel.load(path)


def model_for(rules: Rules) -> LuckModel | None:
    shape = DealShape.of(rules)
    if shape.dealer_sits_out:
        return None
    return shipped_model(shape)


def luck_of_replay(replay: Mapping[str, Any]) -> GameLuck | None:
    """The shipped model's luck for a replay, or None (no model for its rules)."""
    try:
        rules = Rules.from_json(replay["rules"])
    except (KeyError, TypeError, ValueError, EngineError):
        return None
    model = model_for(rules)
    return None if model is None else model.game_luck(replay)


def pair_luck_matrix(luck: GameLuck | None, seats: Sequence[int]) -> list[list[float]]:
    """Luck between seats as a full antisymmetric matrix (zeros without luck)."""
    n = len(seats)
    if luck is None:
        return [[0.0] * n for _ in range(n)]
    return [[luck.pair(a, b) for b in range(n)] for a in range(n)]
