"""The leaderboard rows and the benchmark entry point (figures only, never timed)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from arena.bench.ratings import bench_ratings, main, synthetic_duplicate_table
from arena.ratings import GameResult, RatingRow, fit_bradley_terry, ratings_table


def results() -> list[GameResult]:
    return [
        GameResult.from_scores(["a", "b", "c"], [1000, 400, 100], group="s1"),
        GameResult.from_scores(["b", "c", "a"], [1000, 200, 300], group="s1"),
        GameResult.from_scores(["c", "a", "b"], [50, 1000, 700], group="s2"),
        GameResult.from_scores(["a", "c"], [1000, 900], group="s3"),
    ]


def test_rows_sorted_with_descriptive_figures() -> None:
    rows = ratings_table(results(), n_bootstrap=50, seed=1)
    assert [r.player for r in rows] == ["a", "b", "c"]
    a = rows[0]
    assert isinstance(a, RatingRow)
    assert a.games == 4
    assert a.mean_score == pytest.approx((1000 + 300 + 1000 + 1000) / 4)
    assert a.win_rate == pytest.approx(3 / 4)
    # a beat b and c; lost to b but beat c; beat c and b; beat c: 6 of 7 pairings.
    assert a.pair_score == pytest.approx(6 / 7)
    assert all(r.ci_low <= r.rating <= r.ci_high for r in rows)
    # c never finished ahead of anyone: its rating is the prior's, and the scale is
    # centred on the players the results do bound.
    assert [r.bounded for r in rows] == [True, True, False]
    assert rows[0].rating + rows[1].rating == pytest.approx(0.0, abs=1e-9)


def test_the_scale_is_centred_on_everyone_when_everyone_is_bounded() -> None:
    games = [GameResult.from_scores(["x", "y", "z"], s, group=f"set-{i}")
             for i, s in enumerate([[3, 2, 1], [1, 3, 2], [2, 1, 3], [3, 1, 2]] * 3)]
    rows = ratings_table(games, n_bootstrap=20)
    assert all(r.bounded for r in rows)
    assert sum(r.rating for r in rows) == pytest.approx(0.0, abs=1e-9)


def test_table_uses_prior_by_default_so_perfect_records_render() -> None:
    unbeaten = [GameResult.from_scores(["a", "b"], [1000, 10], group=i) for i in range(5)]
    rows = ratings_table(unbeaten, n_bootstrap=20)
    assert all(math.isfinite(r.rating) and math.isfinite(r.ci_high) for r in rows)
    with pytest.raises(ValueError, match="prior_draws"):
        ratings_table(unbeaten, prior_draws=0.0)


def test_table_agrees_with_fit_and_is_deterministic() -> None:
    rows = ratings_table(results(), anchor="c", n_bootstrap=40, seed=9)
    fit = fit_bradley_terry(results(), anchor="c", prior_draws=1.0, n_bootstrap=40, seed=9)
    for r in rows:
        assert r.rating == pytest.approx(fit.rating(r.player))
        assert (r.ci_low, r.ci_high) == pytest.approx(fit.interval(r.player))
    assert rows == ratings_table(results(), anchor="c", n_bootstrap=40, seed=9)


def test_table_from_array_input() -> None:
    table, _ = synthetic_duplicate_table(6000, n_players=5, seed=4)
    rows = ratings_table(table, n_bootstrap=30)
    assert [r.player for r in rows] == [f"bot{i:02d}" for i in range(4, -1, -1)]
    assert sum(r.games for r in rows) == 6000 * 3
    assert np.isclose(sum(r.win_rate * r.games for r in rows), 6000)


def test_bench_returns_figures() -> None:
    figures = bench_ratings(3000, n_players=6, n_bootstrap=10, live_games=50)
    for key in ("generate_s", "aggregate_s", "fit_s", "fit_with_bootstrap_s", "table_s"):
        assert figures[key] >= 0
    assert figures["n_results"] == 3000 and figures["n_groups"] == 500
    assert figures["max_abs_error_elo"] < 100


def test_bench_main_prints(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--n-results", "600", "--players", "4", "--bootstrap", "5"]) == 0
    out = capsys.readouterr().out
    # Read by people: every figure named in words and with its unit, no raw keys.
    assert "600 synthetic duplicate games" in out
    assert "leaderboard, end to end" in out and " s " in out and " Elo " in out
    assert "games/s" in out and " ms " in out
    assert "table_s" not in out and "sprt_llr" not in out and "from_results_per_s" not in out
    assert main(["--n-results", "600", "--players", "4", "--bootstrap", "5", "--json"]) == 0
    assert "table_s" in capsys.readouterr().out


def test_luck_never_bounds_a_pair_one_side_always_won() -> None:
    """Adjusted results rate close players on their adjusted scores, but a player who won
    every game stays unbounded however the luck fell."""
    from arena.ratings import GameTable

    games = [GameResult.from_scores(["w", "x", "y"], s, group=f"set-{i // 2}")
             for i, s in enumerate([[9, 2, 1], [9, 1, 2]] * 6)]
    table = GameTable.from_results(games)
    rng = np.random.Generator(np.random.PCG64(5))
    width = table.seats.shape[1]
    luck = table.with_luck(rng.normal(0.0, 0.2, size=(table.n_games, width * (width - 1) // 2)))
    raw = {r.player: r for r in ratings_table(luck, n_bootstrap=50)}
    adj = {r.player: r for r in ratings_table(luck, n_bootstrap=50, adjusted=True)}
    assert not raw["w"].bounded and not adj["w"].bounded
    assert adj["x"].bounded and adj["y"].bounded
    assert adj["x"].rating != raw["x"].rating
