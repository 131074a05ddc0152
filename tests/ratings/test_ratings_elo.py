"""Elo/LOS figures against published cutechess and fishtest output."""

from __future__ import annotations

import math

import numpy as np
import pytest

from arena.ratings import (
    GameResult,
    PairData,
    elo_from_distribution,
    elo_from_pentanomial,
    elo_from_wld,
    elo_to_score,
    los,
    los_matrix,
    score_to_elo,
)

# (wins, losses, draws, elo, error, los%) printed by cutechess-cli.
CUTECHESS = [
    (99, 97, 104, 2.3, 31.8, 55.7),
    (45, 37, 18, 27.9, 62.4, 81.2),
]


@pytest.mark.parametrize(("wins", "losses", "draws", "elo", "error", "los_pct"), CUTECHESS)
def test_cutechess_vectors(
    wins: int, losses: int, draws: int, elo: float, error: float, los_pct: float
) -> None:
    est = elo_from_wld(wins, losses, draws)
    # Printed with one decimal: the exact value must round to it.
    assert round(est.elo, 1) == elo
    assert round(est.error, 1) == error
    assert round(100 * est.los, 1) == los_pct
    assert str(est) == f"{elo} ± {error} (LOS {los_pct}%)"


def test_a_score_near_the_edge_prints_no_infinite_error() -> None:
    """An SPRT that stops on lopsided results used to end in ``Elo 783.6 ± inf``."""
    near = elo_from_wld(19, 0, 1)
    assert math.isfinite(near.elo) and not math.isfinite(near.error)
    text = str(near)
    assert "inf" not in text and "interval unbounded" in text and "within its error of 100%" in text
    assert str(elo_from_wld(0, 7, 0)).startswith("-inf (a score of 0%: no finite estimate")


def test_trinomial_error_bar_fishtest_style() -> None:
    # W880 L759 D1863 -> 12.0 ± 7.9 with the exact normal quantile (fishtest/fastchess).
    est = elo_from_wld(880, 759, 1863, exact_quantile=True)
    assert est.elo == pytest.approx(12.0, abs=0.05)
    assert est.error == pytest.approx(7.9, abs=0.05)
    same = elo_from_distribution([0, 0.5, 1], [759, 1863, 880])
    assert same.elo == pytest.approx(est.elo)
    assert same.error == pytest.approx(est.error)


def test_exact_quantile_is_slightly_wider_than_cutechess() -> None:
    approx = elo_from_wld(99, 97, 104)
    exact = elo_from_wld(99, 97, 104, exact_quantile=True)
    assert exact.error > approx.error
    assert exact.error == pytest.approx(approx.error * 1.95996 / 1.95716, rel=1e-3)


def test_pentanomial_normalized_elo_fastchess() -> None:
    est = elo_from_pentanomial([379, 10170, 21828, 10640, 343])
    assert est.nelo == pytest.approx(3.05, abs=0.005)
    assert est.nelo_error == pytest.approx(2.31, abs=0.005)
    assert est.samples == 379 + 10170 + 21828 + 10640 + 343


def test_wld_mirror_symmetry() -> None:
    a, b = elo_from_wld(45, 37, 18), elo_from_wld(37, 45, 18)
    assert a.elo == pytest.approx(-b.elo)
    assert a.error == pytest.approx(b.error)
    assert a.los == pytest.approx(1 - b.los)


def test_degenerate_counts_do_not_crash() -> None:
    all_draws = elo_from_wld(0, 0, 10)
    assert all_draws.elo == 0 and all_draws.error == 0 and all_draws.los == 0.5
    all_wins = elo_from_wld(10, 0, 0)
    assert all_wins.elo == math.inf and all_wins.los > 0.99


def test_score_elo_roundtrip() -> None:
    for e in (-800.0, -100.0, 0.0, 35.5, 400.0):
        assert score_to_elo(elo_to_score(e)) == pytest.approx(e)
    assert elo_to_score(400 * math.log10(3)) == pytest.approx(0.75)
    assert score_to_elo(0.0) == -math.inf and score_to_elo(1.0) == math.inf


def test_los_formula() -> None:
    assert los(0, 0) == 0.5
    assert los(10, 10) == 0.5
    assert los(99, 97) == pytest.approx(0.557, abs=5e-4)
    assert los(97, 99) == pytest.approx(1 - los(99, 97))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: elo_from_wld(-1, 2, 3), "non-negative"),
        (lambda: elo_from_wld(0, 0, 0), "all zero"),
        (lambda: elo_from_wld(1, 1, 1, confidence=1.5), "confidence"),
        (lambda: elo_from_wld(float("nan"), 1, 1), "finite"),
        (lambda: elo_from_pentanomial([1, 2, 3]), "5 entries"),
        (lambda: elo_from_distribution([0, float("nan")], [1, 1]), "finite"),
        (lambda: elo_from_distribution([0, 1], [1, 1], games_per_sample=0), "positive"),
        (lambda: los(-1, 0), "non-negative"),
    ],
)
def test_bad_input_raises(call: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()  # type: ignore[operator]


def test_los_matrix_matches_cutechess_for_single_games() -> None:
    # One group per game: the group formula reduces to Phi((W - L) / sqrt(W + L)).
    outcomes = [1.0] * 99 + [0.0] * 97 + [0.5] * 104
    data = PairData.from_pairwise(["A"] * 300, ["B"] * 300, outcomes)
    m = los_matrix(data)
    assert m.get("A", "B") == pytest.approx(los(99, 97))
    assert m.get("B", "A") == pytest.approx(1 - los(99, 97))
    assert m.get("A", "A") == 0.5


def test_los_matrix_properties_multiplayer() -> None:
    results = [
        GameResult.from_scores(["A", "B", "C"], [1000, 500, 100], group=1),
        GameResult.from_scores(["B", "C", "A"], [1000, 600, 700], group=1),
        GameResult.from_scores(["C", "A", "B"], [300, 1010, 800], group=2),
        GameResult.from_scores(["A", "C", "B"], [200, 1000, 200], group=3),
    ]
    m = los_matrix(results)
    assert m.players == ("A", "B", "C")
    np.testing.assert_allclose(m.matrix + m.matrix.T, 1.0)
    assert np.all((m.matrix >= 0) & (m.matrix <= 1))
    assert m.get("A", "C") > 0.5


def test_los_matrix_counts_groups_not_games() -> None:
    # 42 wins and 18 losses. As independent games that is strong evidence; as 10 duplicate
    # sets whose 6 games all went the same way it is only 7 sets against 3.
    outcomes = [1.0] * 42 + [0.0] * 18
    independent = PairData.from_pairwise(["A"] * 60, ["B"] * 60, outcomes)
    grouped = PairData.from_pairwise(
        ["A"] * 60, ["B"] * 60, outcomes, groups=[i // 6 for i in range(60)]
    )
    assert los_matrix(independent).get("A", "B") == pytest.approx(los(42, 18))
    assert 0.5 < los_matrix(grouped).get("A", "B") < 0.9 < los_matrix(independent).get("A", "B")
