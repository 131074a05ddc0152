"""The luck model: a frozen value function and the correction it gives a finished game.

Fitted by ``arena ratings train-luck`` on games of the arena's own bots and shipped as
numpy arrays, in two parts:

* the **deal values** ``e_vs(deck)``: for each seat s, the points it can expect from a deal
  (v = 0) and the chance that the deal brings it 120 points or more, the size of a contract
  that takes a player off the barrel (v = 1); linear in the card features of
  :mod:`arena.ratings.luck.features`, one weight vector per place at the table, and centred
  on their exact means over all shuffles;
* the **state coefficients**: how much a unit of each seat's deal value moves the chance
  that seat a finishes ahead of seat b, as a linear function of the state before the deal
  (scores, who is on the barrel and for how many deals, the deals left under a limit),
  antisymmetric in a and b by construction.

The value of the state after a deal is dealt is ``V_ab = W_ab(state) + sum_vs c_vs(state) *
e_vs(deck)``; its mean over fresh shuffles is ``W_ab(state)`` exactly, so the luck of a deal
is the second term and needs no ``W``: ``L_ab = sum_vs c_vs(state) * e_vs(deck)``. A game's
luck is the sum over its deals. See ``docs/ratings.md`` for why subtracting it leaves every
expected result unchanged.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
from collections.abc import Mapping
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
MODEL_VERSION = 2
#: Card names as replays write them (``TH``; ``10H`` too) -> engine card numbers.
_CARD = {**{name: i for i, name in enumerate(CARD_NAMES)},
         **{name.replace("T", "10"): i for i, name in enumerate(CARD_NAMES) if name[0] == "T"}}
#: Deal values per seat: expected points, the chance of 120 points or more, and the chance
#: of losing 100 or more.
VALUES = ("points", "big-deal", "bad-deal")
#: Deals on the barrel counted (more count as this many).
MAX_TRIES = 3


def seat_pairs(n: int) -> list[tuple[int, int]]:
    """The seat pairs of an n-seat game in the order luck values are stored: (0, 1), (0, 2),
    ..., (1, 2), ...: the same order as the pairwise results of the ratings."""
    return [(a, b) for a in range(n) for b in range(a + 1, n)]


STATE_NAMES = ("one", "barrel-own", "barrel-opponent", "barrel-third", "score-own",
               "score-opponent", "score-third", "tries-own", "tries-opponent",
               "near-own", "near-opponent", "barrel-own*barrel-opponent",
               "limited/sqrt(left)", "limited*score-gap")


def state_features(x: FloatArray, barrel: FloatArray, tries: FloatArray, left: FloatArray,
                   limited: FloatArray, p: int, q: int, c: int | None) -> FloatArray:
    """``g(p, q)``: the state before each deal as seat p facing seat q (third seat c).

    ``x`` scores as fractions of the target, ``barrel`` 1 for a seat on the barrel,
    ``tries`` its deals there so far (of ``MAX_TRIES``), ``left`` the deals left after
    this one and ``limited`` 1 under a deal limit; all ``(deals, seats)`` or ``(deals,)``.
    """
    zero = np.zeros(len(x))
    third_b = barrel[:, c] if c is not None else zero
    third_x = x[:, c] if c is not None else zero
    near_p = (x[:, p] >= 0.7) * (1.0 - barrel[:, p])
    near_q = (x[:, q] >= 0.7) * (1.0 - barrel[:, q])
    return np.stack([
        np.ones(len(x)), barrel[:, p], barrel[:, q], third_b, x[:, p], x[:, q], third_x,
        tries[:, p] / MAX_TRIES, tries[:, q] / MAX_TRIES, near_p, near_q,
        barrel[:, p] * barrel[:, q], limited / np.sqrt(left + 1.0),
        limited * (x[:, p] - x[:, q]),
    ], axis=1)


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

    def state(self) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]:
        """Scores (fractions of the target), barrel flags, deals on the barrel so far, deals
        left after each deal and the deal-limit flag: everything known before each deal."""
        rules = self.rules
        x = self.scores_before / float(rules.target)
        k, n = self.scores_before.shape
        barrel = np.zeros((k, n))
        if rules.barrel is not None:
            on = (self.scores_before >= rules.barrel) & (self.scores_before < rules.target)
            barrel = on.astype(np.float64)
        # Deals on the barrel before this one, in the current stay: the run of barrel flags
        # ending here, less this deal, capped.
        idx = np.arange(k)[:, None]
        last_off = np.maximum.accumulate(np.where(barrel == 0, idx, -1), axis=0)
        tries = barrel * np.minimum(idx - last_off - 1, MAX_TRIES)
        limited = np.full(k, 1.0 if rules.max_deals is not None else 0.0)
        left = np.maximum(0.0, (rules.max_deals or 0) - self.indices - 1.0).astype(np.float64)
        return x, barrel, tries, left, limited

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
        if self.shape.dealer_sits_out or self.shape.active != self.shape.players:
            raise ValueError("luck model: only tables where every seat plays every deal")
        self.features: FeatureSet = feature_set(self.shape)
        self.beta = np.asarray(arrays["beta"], dtype=np.float64)
        self.gamma = np.asarray(arrays["gamma"], dtype=np.float64)
        if self.beta.shape != (len(VALUES), self.shape.active, self.features.size):
            raise ValueError("luck model: the deal weights do not fit the card features")
        if self.gamma.shape != (len(VALUES), 2, len(STATE_NAMES)):
            raise ValueError("luck model: the state weights do not fit the state features")
        self.digest = _digest(self.beta, self.gamma, self.meta)

    # -- files -------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | Path) -> LuckModel:
        return cls.from_bytes(Path(path).read_bytes())

    @classmethod
    def from_bytes(cls, blob: bytes) -> LuckModel:
        try:
            with np.load(io.BytesIO(blob), allow_pickle=False) as data:
                arrays = {k: data[k] for k in data.files if k != "meta"}
                meta = json.loads(str(data["meta"]))
        except (OSError, KeyError, ValueError) as exc:
            raise ValueError(f"not a luck model file: {exc}") from None
        return cls(arrays, meta)

    def save(self, path: str | Path) -> None:
        Path(path).write_bytes(self.to_bytes())

    def to_bytes(self) -> bytes:
        buf = io.BytesIO()
        np.savez(buf, beta=self.beta, gamma=self.gamma,
                 meta=np.array(json.dumps(self.meta, sort_keys=True)))
        return buf.getvalue()

    @property
    def short(self) -> str:
        """The first 12 hex digits of the digest, as reports print it."""
        return self.digest[:12]

    # -- values ------------------------------------------------------------------------

    def deal_values(self, decks: IntArray, dealer: IntArray) -> FloatArray:
        """``e[k, v, s]``: seat s's deal value v in deal k, centred on its mean over all
        shuffles (so its mean over fresh shuffles is exactly 0)."""
        n = self.shape.players
        owner = deck_owner(self.shape, decks)
        phi = self.features.values(owner) - self.features.means  # (deals, role, F)
        by_role = np.einsum("krf,vrf->kvr", phi, self.beta)
        seat_role = (np.arange(n)[None, :] - dealer[:, None] - 1) % n
        k = len(dealer)
        out: FloatArray = by_role[np.arange(k)[:, None, None],
                                  np.arange(len(VALUES))[None, :, None], seat_role[:, None, :]]
        return out

    def design(self, log: DealLog, e: FloatArray) -> FloatArray:
        """``X[k, i, :]``: the regressors of deal k for seat pair i; the pair's luck in the
        deal is ``X @ gamma.ravel()``. Antisymmetric: swapping a and b negates each row."""
        x, barrel, tries, left, limited = log.state()
        n = self.shape.players
        rows = []
        for a, b in seat_pairs(n):
            c = next((s for s in range(n) if s not in (a, b)), None)
            ga = state_features(x, barrel, tries, left, limited, a, b, c)
            gb = state_features(x, barrel, tries, left, limited, b, a, c)
            parts = []
            for v in range(len(VALUES)):
                parts.append(ga * e[:, v, a, None] - gb * e[:, v, b, None])
                third = e[:, v, c, None] if c is not None else np.zeros((len(x), 1))
                parts.append((ga - gb) * third)
            rows.append(np.concatenate(parts, axis=1))
        out: FloatArray = np.stack(rows, axis=1)
        return out

    def deal_luck(self, log: DealLog) -> FloatArray:
        """``L[k, i]``: the luck of deal k for seat pair i (zero mean over shuffles): the
        same as ``design(log, e) @ gamma``, with the state features weighted first."""
        e = self.deal_values(log.decks, log.dealers)
        x, barrel, tries, left, limited = log.state()
        n = self.shape.players
        own, third = self.gamma[:, 0, :].T, self.gamma[:, 1, :].T  # (features, values)
        cols = []
        for a, b in seat_pairs(n):
            c = next((s for s in range(n) if s not in (a, b)), None)
            ga = state_features(x, barrel, tries, left, limited, a, b, c)
            gb = state_features(x, barrel, tries, left, limited, b, a, c)
            term = (ga @ own * e[:, :, a] - gb @ own * e[:, :, b]).sum(axis=1)
            if c is not None:
                term += ((ga - gb) @ third * e[:, :, c]).sum(axis=1)
            cols.append(term)
        luck: FloatArray = np.stack(cols, axis=1)
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


def _digest(beta: FloatArray, gamma: FloatArray, meta: Mapping[str, Any]) -> str:
    """SHA-256 of the weights and of what they mean (shape, features, state), not of how
    long training took: the same weights always have the same name."""
    h = hashlib.sha256()
    h.update(MODEL_FORMAT.encode())
    for arr in (beta, gamma):
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
