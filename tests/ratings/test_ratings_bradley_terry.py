"""Bradley-Terry fit: the published check, anchoring, symmetry, priors and the bootstrap."""

from __future__ import annotations

import math

import numpy as np
import pytest

from arena.bench.ratings import synthetic_duplicate_table
from arena.ratings import (
    GameResult,
    GameTable,
    PairData,
    fit_bradley_terry,
    solve_bradley_terry,
)


def three_one() -> PairData:
    return PairData.from_pairwise(["A"] * 4, ["B"] * 4, [1.0, 1.0, 1.0, 0.0])


def test_published_three_wins_one_loss() -> None:
    # Prior is off by default, so this is the bare MLE: theta_A - theta_B = ln 3.
    fit = fit_bradley_terry(three_one())
    assert fit.prior_draws == 0.0
    assert fit.rating("A") - fit.rating("B") == pytest.approx(400 * math.log10(3), abs=1e-4)
    assert fit.rating("A") - fit.rating("B") == pytest.approx(190.8485, abs=1e-4)
    assert fit.expected_score("A", "B") == pytest.approx(0.75)


def test_mean_anchor_and_named_anchor() -> None:
    fit = fit_bradley_terry(three_one())
    assert fit.ratings.mean() == pytest.approx(0.0, abs=1e-9)
    assert fit.rating("A") == pytest.approx(190.8485 / 2, abs=1e-4)
    pinned = fit_bradley_terry(three_one(), anchor="B")
    assert pinned.rating("B") == 0.0
    assert pinned.rating("A") == pytest.approx(190.8485, abs=1e-4)


def test_ties_count_half() -> None:
    # A 3-1 record and a record of 2 wins and 2 draws (= 3 points of 4) fit identically.
    draws = PairData.from_pairwise(["A"] * 4, ["B"] * 4, [1.0, 1.0, 0.5, 0.5])
    assert fit_bradley_terry(draws).rating("A") == pytest.approx(
        fit_bradley_terry(three_one()).rating("A")
    )


def test_multiplayer_game_decomposes_into_pairs_by_rank() -> None:
    game = GameResult(("C", "A", "B"), (120.0, 1000.0, 120.0), (2, 1, 2))
    pairs = PairData.from_results([game])
    wins, games = pairs.totals()
    # A beats B and C; B and C tie.
    np.testing.assert_allclose(wins, np.array([[0, 1, 1], [0, 0, 0.5], [0, 0.5, 0]]))
    np.testing.assert_allclose(games, np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0]]))


def _cyclic_results() -> list[GameResult]:
    out = []
    names = ["ann", "bob", "cat", "dan"]
    for g in range(40):
        order = [names[(g + k) % 4] for k in range(3)]
        scores = [1000.0, 600.0, 300.0] if g % 3 else [300.0, 1000.0, 600.0]
        out.append(GameResult.from_scores(order, scores, group=g // 4))
    return out


def test_relabelling_players_permutes_ratings() -> None:
    results = _cyclic_results()
    rename = {"ann": "zed", "bob": "yan", "cat": "xia", "dan": "wim"}
    renamed = [
        GameResult(tuple(rename[p] for p in r.players), r.scores, r.ranks, r.group) for r in results
    ]
    a = fit_bradley_terry(results, n_bootstrap=50, seed=3)
    b = fit_bradley_terry(renamed, n_bootstrap=50, seed=3)
    for old, new in rename.items():
        assert a.rating(old) == pytest.approx(b.rating(new))
        assert a.interval(old) == pytest.approx(b.interval(new))


def test_reversing_every_result_negates_ratings() -> None:
    results = _cyclic_results()
    flipped = [
        GameResult(r.players, r.scores, tuple(4 - x for x in r.ranks), r.group) for r in results
    ]
    a, b = fit_bradley_terry(results), fit_bradley_terry(flipped)
    np.testing.assert_allclose(a.ratings, -b.ratings, atol=1e-9)


def test_fit_matches_maximum_likelihood_gradient() -> None:
    pairs = PairData.from_results(_cyclic_results())
    fit = fit_bradley_terry(pairs)
    wins, games = pairs.totals()
    theta = fit.ratings * math.log(10) / 400
    prob = 1 / (1 + np.exp(-(theta[:, None] - theta[None, :])))
    np.testing.assert_allclose((wins - games * prob).sum(axis=1), 0.0, atol=1e-9)


def test_all_wins_without_prior_raises_clear_error() -> None:
    data = PairData.from_pairwise(["A", "A", "B"], ["B", "C", "C"], [1.0, 1.0, 0.5])
    with pytest.raises(ValueError, match=r"never conceded a point: A.*prior_draws"):
        fit_bradley_terry(data)


def test_prior_makes_perfect_records_finite_and_shrinks() -> None:
    data = PairData.from_pairwise(["A", "A", "B"], ["B", "C", "C"], [1.0, 1.0, 1.0])
    weak = fit_bradley_terry(data, prior_draws=1.0)
    strong = fit_bradley_terry(data, prior_draws=10.0)
    assert np.all(np.isfinite(weak.ratings))
    assert weak.rating("A") > weak.rating("B") > weak.rating("C")
    assert 0 < strong.rating("A") < weak.rating("A")


def test_prior_virtual_draws_two_players() -> None:
    # With 2 players, prior_draws=2 adds exactly two draws: 3-1 becomes 4-2, i.e. ln 2.
    fit = fit_bradley_terry(three_one(), prior_draws=2.0)
    assert fit.rating("A") - fit.rating("B") == pytest.approx(400 * math.log10(2), abs=1e-6)


def test_disconnected_players_raise_without_prior() -> None:
    data = PairData.from_pairwise(["A", "B", "C", "D"], ["B", "A", "D", "C"], [1, 0, 1, 0])
    with pytest.raises(ValueError, match="unbounded"):
        fit_bradley_terry(data)
    assert np.all(np.isfinite(fit_bradley_terry(data, prior_draws=0.5).ratings))


def test_bootstrap_is_deterministic_given_seed() -> None:
    results = _cyclic_results()
    a = fit_bradley_terry(results, prior_draws=1.0, n_bootstrap=100, seed=42)
    b = fit_bradley_terry(results, prior_draws=1.0, n_bootstrap=100, seed=42)
    c = fit_bradley_terry(results, prior_draws=1.0, n_bootstrap=100, seed=43)
    assert a.bootstrap_ratings is not None and b.bootstrap_ratings is not None
    np.testing.assert_array_equal(a.bootstrap_ratings, b.bootstrap_ratings)
    np.testing.assert_array_equal(a.ci_low, b.ci_low)
    assert not np.array_equal(a.ci_low, c.ci_low)
    assert np.all(a.ci_low <= a.ratings + 1e-9) and np.all(a.ratings <= a.ci_high + 1e-9)


def test_no_bootstrap_gives_nan_intervals() -> None:
    fit = fit_bradley_terry(three_one())
    assert fit.bootstrap_ratings is None
    assert np.all(np.isnan(fit.ci_low)) and np.all(np.isnan(fit.ci_high))


def test_named_anchor_interval_is_zero() -> None:
    fit = fit_bradley_terry(_cyclic_results(), anchor="bob", prior_draws=1.0, n_bootstrap=50)
    assert fit.interval("bob") == (0.0, 0.0)


def test_bootstrap_resamples_groups_not_games() -> None:
    # Each group repeats one outcome 6 times (perfectly correlated games). Resampling
    # groups must see about sqrt(6) times the spread that resampling games would.
    rng = np.random.Generator(np.random.PCG64(9))
    base_a = rng.integers(0, 3, size=300)
    base_b = (base_a + rng.integers(1, 3, size=300)) % 3
    base_s = (rng.random(300) < 0.6).astype(float)
    names = ["p0", "p1", "p2"]
    a, b, s = np.repeat(base_a, 6), np.repeat(base_b, 6), np.repeat(base_s, 6)
    grouped = PairData.from_pairwise_arrays(names, a, b, s, np.repeat(np.arange(300), 6))
    ungrouped = PairData.from_pairwise_arrays(names, a, b, s)
    by_group = fit_bradley_terry(grouped, n_bootstrap=300, seed=1)
    by_game = fit_bradley_terry(ungrouped, n_bootstrap=300, seed=1)
    np.testing.assert_allclose(by_group.ratings, by_game.ratings)
    ratio = np.mean(by_group.ci_high - by_group.ci_low) / np.mean(by_game.ci_high - by_game.ci_low)
    assert 1.8 < ratio < 3.2


def test_duplicate_sets_cancel_seat_luck() -> None:
    # In the synthetic duplicate data every player sits in every seat of a deal, so the
    # set's total is less noisy than its games: group intervals are not wider.
    table, _ = synthetic_duplicate_table(3000, n_players=6, seats=3, seed=5)
    per_game = GameTable(
        table.players,
        table.seats,
        table.ranks,
        table.scores,
        np.arange(table.n_games, dtype=np.int64),
        table.n_games,
    )
    by_group = fit_bradley_terry(table, prior_draws=1.0, n_bootstrap=200, seed=1)
    by_game = fit_bradley_terry(per_game, prior_draws=1.0, n_bootstrap=200, seed=1)
    np.testing.assert_allclose(by_group.ratings, by_game.ratings)
    assert np.mean(by_group.ci_high - by_group.ci_low) < 1.1 * np.mean(
        by_game.ci_high - by_game.ci_low
    )


def test_recovers_true_strengths() -> None:
    table, true_elo = synthetic_duplicate_table(60_000, n_players=8, seats=3, seed=11)
    fit = fit_bradley_terry(table, n_bootstrap=100, seed=2)
    truth = true_elo - true_elo.mean()
    assert np.max(np.abs(fit.ratings - truth)) < 15
    covered = (fit.ci_low <= truth) & (truth <= fit.ci_high)
    assert covered.sum() >= 6


def test_batched_solver_equals_single_solves() -> None:
    rng = np.random.Generator(np.random.PCG64(0))
    games = rng.integers(1, 20, size=(5, 4, 4)).astype(float)
    games = np.triu(games, 1)
    games = games + games.transpose(0, 2, 1)
    share = rng.uniform(0.1, 0.9, size=(5, 4, 4))
    upper = np.triu(games * share, 1)
    wins = upper + np.transpose(np.triu(games, 1) - upper, (0, 2, 1))
    batch = solve_bradley_terry(wins, games)
    for b in range(5):
        single = solve_bradley_terry(wins[b : b + 1], games[b : b + 1])[0]
        np.testing.assert_allclose(batch[b], single, atol=1e-9)
    np.testing.assert_allclose(batch.mean(axis=1), 0.0, atol=1e-12)


def test_large_rating_gap_converges() -> None:
    # 999-1: a gap of ~1200 Elo. Newton must not overshoot into divergence.
    data = PairData.from_pairwise(["A"] * 1000, ["B"] * 1000, [1.0] * 999 + [0.0])
    fit = fit_bradley_terry(data, anchor="B")
    assert fit.rating("A") == pytest.approx(400 * math.log10(999), abs=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"anchor": "nobody"}, "anchor 'nobody'"),
        ({"prior_draws": -1.0}, "prior_draws"),
        ({"prior_draws": float("inf")}, "prior_draws"),
        ({"n_bootstrap": 1}, "at least 2"),
        ({"n_bootstrap": -5}, "n_bootstrap"),
        ({"confidence": 0.0}, "confidence"),
        ({"seed": -1}, "seed"),
    ],
)
def test_bad_arguments_raise(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        fit_bradley_terry(three_one(), **kwargs)  # type: ignore[arg-type]


def test_bootstrap_without_prior_reports_replicate_problem() -> None:
    # Two groups: a bootstrap replicate that draws only the winning group is a perfect record.
    data = PairData.from_pairwise(["A", "A"], ["B", "B"], [1.0, 0.0], groups=[1, 2])
    assert fit_bradley_terry(data).rating("A") == pytest.approx(0.0, abs=1e-9)
    with pytest.raises(ValueError, match="bootstrap replicate"):
        fit_bradley_terry(data, n_bootstrap=50, seed=0)
