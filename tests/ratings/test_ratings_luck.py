"""Luck-adjusted results: the correction has mean zero exactly, for the shipped model and for
a deliberately poor one, on real games of the built-in bots; the model file is what the
training command makes."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from arena.engine import Rules
from arena.match.types import MatchSpec
from arena.ratings.luck import DealLog, DealShape, LuckModel, luck_of_replay, seat_pairs
from arena.ratings.luck.features import deck_owner, feature_set
from arena.ratings.luck.model import STATE_NAMES, VALUES, model_for, model_path
from arena.ratings.luck.train import (
    WEIGHT_GRID,
    build_model,
    fit_beta,
    frozen,
    pair_results,
    play_training_games,
    slim_replay,
    train,
)
from arena.referee.runner import run_match_sync

CLASSIC = DealShape.of(Rules.preset("classic"))
CAUTIOUS = "arena.server.builtin_remote:CautiousGreedyBot"


def _play(seed: str, bots: tuple[str, ...], max_deals: int | None = None) -> tuple[dict, list]:
    spec = MatchSpec(match_id=hashlib.sha256(seed.encode()).hexdigest()[:32],
                     rules={"preset": "classic", "options": {}}, seed=seed, bots=bots,
                     max_deals=max_deals)
    result = run_match_sync(spec)
    assert result.replay is not None
    return result.replay, list(result.ranks)


def _poor_model() -> LuckModel:
    """Random weights: a value function that knows nothing about the game."""
    rng = np.random.Generator(np.random.PCG64(7))
    fs = feature_set(CLASSIC)
    beta = rng.normal(0.0, 0.05, size=(len(VALUES), 3, fs.size))
    gamma = rng.normal(0.0, 1.0, size=(len(VALUES), 2, len(STATE_NAMES)))
    return build_model(CLASSIC, beta, gamma, {"preset": "classic"})


def test_feature_means_are_the_exact_chances_of_their_cards_landing_there() -> None:
    """Counted position by position, independently of the falling-factorial formula."""
    fs = feature_set(CLASSIC)
    part = CLASSIC.position_part
    deck = CLASSIC.deck
    for f in range(fs.size):
        (_, c1), (p0, p1) = fs.cards[f], fs.parts[f]
        if c1 < 0:
            want = np.sum(part == p0) / deck
        else:
            hits = sum(1 for i, j in itertools.permutations(range(deck), 2)
                       if part[i] == p0 and part[j] == p1)
            want = hits / (deck * (deck - 1))
        assert fs.means[f] == pytest.approx(want, abs=1e-15), fs.names[f]


def test_the_deal_layout_is_the_engines() -> None:
    from arena.engine import Game

    game = Game(Rules.preset("classic"), seed="layout", dealer=2)
    game.deal()
    owner = deck_owner(CLASSIC, np.array([game.records[-1].deck]))[0]
    cards = np.array(CLASSIC.cards)
    for seat in range(3):
        held = set(cards[owner == (seat - 2 - 1) % 3].tolist())
        assert held == {c for c in range(32) if game.hands[seat] >> c & 1}


@pytest.mark.parametrize("which", ["shipped", "poor"])
def test_a_deals_luck_averages_to_zero_over_fresh_shuffles(which: str) -> None:
    model = model_for(Rules.preset("classic")) if which == "shipped" else _poor_model()
    assert model is not None
    rng = np.random.Generator(np.random.PCG64(3))
    k = 40_000
    decks = np.array(CLASSIC.cards)[np.argsort(rng.random((k, 24)), axis=1)]
    # States of every kind (a seat on the barrel for a few deals, close scores, far ones),
    # fixed before the decks are drawn.
    states = np.array([[880.0, 620.0, 310.0], [880.0, 880.0, 0.0], [120.0, 45.0, 700.0]])
    log = DealLog(Rules.preset("classic", max_deals=40), states[np.arange(k) % 3],
                  rng.integers(0, 3, size=k), np.arange(k) % 40, decks, np.zeros((k, 3)))
    luck = model.deal_luck(log)
    assert luck.std(axis=0).min() > 0
    se = luck.std(axis=0) / math.sqrt(k)
    assert np.all(np.abs(luck.mean(axis=0)) < 4 * se), (luck.mean(axis=0), se)


def test_luck_is_antisymmetric_and_the_same_with_or_without_decks() -> None:
    replay, _ = _play("luck/antisymmetric", ("greedy", CAUTIOUS, "random"), max_deals=6)
    luck = luck_of_replay(replay)
    assert luck is not None and luck.deals == len(replay["deals"]) and len(luck.pairs) == 3
    assert luck.pair(2, 0) == -luck.pair(0, 2)
    bare = {**replay, "deals": [{k: v for k, v in d.items() if k != "deck"}
                                for d in replay["deals"]]}
    assert luck_of_replay(bare) == luck
    assert luck_of_replay({**replay, "rules": {"preset": "classic-4", "options": {}}}) is None


def _unbiased(model: LuckModel, games: int) -> tuple[float, float, float]:
    """Seat 0 against seat 1 over independent games of one bot against itself: raw mean,
    adjusted mean, and the standard error of the adjusted mean."""
    raw, adj = [], []
    for i in range(games):
        replay, ranks = _play(f"luck/self-play/{i}", ("greedy",) * 3, max_deals=8)
        luck = model.game_luck(slim_replay(replay))
        assert luck is not None
        y = pair_results(ranks)
        for k, (a, b) in enumerate(seat_pairs(3)):
            raw.append(y[k] if (a, b) == (0, 1) else 0.5)
            adj.append(y[k] - luck.pairs[k] if (a, b) == (0, 1) else 0.5)
    r, d = np.array(raw[::3]), np.array(adj[::3])
    return float(r.mean()), float(d.mean()), float(d.std(ddof=1) / math.sqrt(len(d)))


@pytest.mark.parametrize("which", ["shipped", "poor"])
def test_self_play_scores_one_half_within_its_interval(which: str) -> None:
    """One bot against itself, independent games: the adjusted score of seat 0 against seat
    1 is 1/2 within its 95% interval, with the shipped model and with random weights."""
    model = model_for(Rules.preset("classic")) if which == "shipped" else _poor_model()
    assert model is not None
    raw, adjusted, se = _unbiased(model, 150)
    assert abs(adjusted - 0.5) < 1.96 * se, (raw, adjusted, se)
    assert adjusted != raw


def test_the_shipped_model_is_named_by_its_digest(tmp_path: Path) -> None:
    model = model_for(Rules.preset("classic"))
    assert model is not None and model_path(CLASSIC).is_file()
    assert model.meta["training"]["seeds"].startswith("luck-train/classic/")
    again = LuckModel.from_bytes(model.to_bytes())
    assert again.digest == model.digest and len(model.short) == 12
    out = subprocess.run([sys.executable, "-m", "arena.cli", "ratings", "luck-model", "--json"],
                         capture_output=True, text=True, check=True)
    assert json.loads(out.stdout)["digest"] == model.digest


def test_training_is_reproducible() -> None:
    a = train("classic", 24, jobs=1)
    b = train("classic", 24, jobs=1)
    assert a.digest == b.digest
    assert a.meta["training"]["games"] == 24


def test_a_fit_another_processor_rounds_differently_gets_the_same_digest() -> None:
    """BLAS on another processor changes a fit in its 12th digit (1e-11 measured on the
    classic model): the frozen weights, and so the digest, stay the same; unfrozen, they
    would not."""
    raw = fit_beta(CLASSIC, play_training_games(24, "classic", jobs=1))
    rng = np.random.Generator(np.random.PCG64(11))
    other = raw + rng.uniform(-1e-11, 1e-11, size=raw.shape)
    gamma = np.zeros((len(VALUES), 2, len(STATE_NAMES)))
    assert (build_model(CLASSIC, raw, gamma, {}).digest
            != build_model(CLASSIC, other, gamma, {}).digest)
    assert np.array_equal(frozen(raw), frozen(other))
    assert (build_model(CLASSIC, frozen(raw), gamma, {}).digest
            == build_model(CLASSIC, frozen(other), gamma, {}).digest)
    assert np.abs(frozen(raw) - raw).max() <= WEIGHT_GRID / 2


def test_the_shipped_weights_are_frozen() -> None:
    """The shipped model is what training makes: weights on the grid, so a user who trains
    it again on another machine gets the same digest."""
    model = model_for(Rules.preset("classic"))
    assert model is not None
    assert np.array_equal(frozen(model.beta), model.beta)
    assert np.array_equal(frozen(model.gamma), model.gamma)


def test_a_replay_the_model_cannot_read_has_no_luck() -> None:
    assert luck_of_replay({"rules": {"preset": "classic"}, "deals": [{"index": 0}]}) is None
    with pytest.raises(ValueError, match="not a replay"):
        DealLog.from_replay({"rules": {"preset": "classic"},
                             "deals": [{"index": 0, "dealer": 0, "deck": ["AS"] * 24}]})
