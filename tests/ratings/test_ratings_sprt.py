"""GSPRT against the published Fishtest / fastchess vectors, plus its invariants."""

from __future__ import annotations

import math

import numpy as np
import pytest

from arena.ratings import (
    Decision,
    Sprt,
    llr,
    llr_pentanomial,
    llr_trinomial,
    scores_distribution,
    sprt_bounds,
)

# kind, counts, model, elo0, elo1, expected LLR, tolerance (from the number of printed digits).
# Trinomial counts are W, L, D; pentanomial counts run from 0 to 2 points per pair.
VECTORS = [
    ("tri", (880, 759, 1863), "logistic", 0, 5, 2.95, 0.005),
    ("penta", (365, 16618, 36229, 16974, 390), "normalized", 0, 2, 2.25, 0.005),
    ("tri", (36433, 36027, 68692), "normalized", 0, 2, 0.92, 0.005),
    ("penta", (379, 10170, 21828, 10640, 343), "normalized", 0, 2, 2.946, 1e-3),
    ("penta", (10789, 19328, 33806, 19402, 10543), "logistic", -3, 1, 2.13107, 1e-5),
    ("tri", (65388, 65804, 56553), "logistic", -3, 1, 2.04904, 1e-5),
]


@pytest.mark.parametrize(("kind", "counts", "model", "elo0", "elo1", "expected", "tol"), VECTORS)
def test_published_llr(
    kind: str,
    counts: tuple[int, ...],
    model: str,
    elo0: float,
    elo1: float,
    expected: float,
    tol: float,
) -> None:
    if kind == "tri":
        wins, losses, draws = counts
        value = llr_trinomial(wins, losses, draws, elo0, elo1, model=model)  # type: ignore[arg-type]
        result = Sprt(elo0, elo1, model=model).trinomial(wins, losses, draws)  # type: ignore[arg-type]
    else:
        value = llr_pentanomial(counts, elo0, elo1, model=model)  # type: ignore[arg-type]
        result = Sprt(elo0, elo1, model=model).pentanomial(counts)  # type: ignore[arg-type]
    assert value == pytest.approx(expected, abs=tol)
    assert result.llr == value


def test_bounds() -> None:
    lower, upper = sprt_bounds(0.05, 0.05)
    assert lower == pytest.approx(-2.944, abs=5e-4)
    assert upper == pytest.approx(2.944, abs=5e-4)
    assert lower == pytest.approx(math.log(0.05 / 0.95))
    lo2, up2 = sprt_bounds(alpha=0.01, beta=0.1)
    assert lo2 == pytest.approx(math.log(0.1 / 0.99)) and up2 == pytest.approx(math.log(0.9 / 0.01))


def test_decisions_for_the_vectors() -> None:
    # 2.95 just clears the 2.944 bound; the others are still running.
    assert Sprt(0, 5).trinomial(880, 759, 1863).decision is Decision.H1
    normalized = Sprt(0, 2, model="normalized")
    assert normalized.pentanomial((379, 10170, 21828, 10640, 343)).decision is Decision.H1
    assert normalized.pentanomial((365, 16618, 36229, 16974, 390)).decision is Decision.CONTINUE
    assert Sprt(-3, 1).trinomial(65388, 65804, 56553).decision is Decision.CONTINUE
    assert Sprt(0, 5).trinomial(700, 900, 1800).decision is Decision.H0


def test_decide_is_inclusive_at_bounds() -> None:
    s = Sprt(0, 5)
    assert s.decide(s.upper) is Decision.H1
    assert s.decide(s.lower) is Decision.H0
    assert s.decide(0.0) is Decision.CONTINUE
    assert str(Decision.H1) == "H1 accepted"


def test_elo_estimate_attached_to_result() -> None:
    result = Sprt(0, 5).trinomial(880, 759, 1863)
    assert result.estimate.elo == pytest.approx(12.0, abs=0.05)
    assert result.estimate.error == pytest.approx(7.9, abs=0.05)
    assert result.samples == 880 + 759 + 1863
    assert "H1 accepted" in str(result)
    penta = Sprt(0, 2, model="normalized").pentanomial((379, 10170, 21828, 10640, 343))
    assert penta.estimate.nelo == pytest.approx(3.05, abs=0.005)
    assert penta.estimate.nelo_error == pytest.approx(2.31, abs=0.005)


@pytest.mark.parametrize("model", ["logistic", "normalized"])
def test_mirror_symmetry(model: str) -> None:
    # Swapping the players mirrors the data and the hypotheses: LLR(H1 vs H0) flips sign
    # with [elo0, elo1] -> [-elo1, -elo0].
    counts = [10789, 19328, 33806, 19402, 10543]
    a = llr_pentanomial(counts, -3, 1, model=model)  # type: ignore[arg-type]
    b = llr_pentanomial(counts[::-1], -1, 3, model=model)  # type: ignore[arg-type]
    assert a == pytest.approx(-b, abs=1e-9)


def test_llr_zero_when_hypotheses_symmetric_around_data() -> None:
    assert llr_trinomial(100, 100, 50, -5, 5) == pytest.approx(0.0, abs=1e-12)


def test_general_form_equals_pentanomial() -> None:
    counts = [379, 10170, 21828, 10640, 343]
    samples = np.repeat([0.0, 0.25, 0.5, 0.75, 1.0], counts)
    for model in ("logistic", "normalized"):
        expected = llr_pentanomial(counts, 0, 2, model=model)
        s = Sprt(0, 2, model=model)
        assert s.scores(samples, games_per_sample=2).llr == pytest.approx(expected, abs=1e-9)


def test_general_form_empty_classes_are_regularised_like_trinomial() -> None:
    # No draws: the trinomial form regularises the empty class, so must the general one.
    samples = [1.0] * 30 + [0.0] * 20
    values, counts = scores_distribution(samples, support=[0.0, 0.5, 1.0])
    assert values.tolist() == [0.0, 0.5, 1.0] and counts.tolist() == [20, 0, 30]
    assert llr(values, counts, 0, 5) == pytest.approx(llr_trinomial(30, 20, 0, 0, 5))


def test_three_player_duplicate_sets() -> None:
    # Set scores of A vs B over 6 games take values k/12. A consistently better A passes.
    rng = np.random.Generator(np.random.PCG64(3))
    k = np.clip(np.round(rng.normal(6.6, 2.0, size=4000)), 0, 12)
    support = np.arange(13) / 12
    result = Sprt(0, 5).scores(k / 12, games_per_sample=6, support=support)
    assert result.decision is Decision.H1
    assert result.estimate.elo > 5
    worse = Sprt(0, 5).scores((12 - k) / 12, games_per_sample=6, support=support)
    assert worse.decision is Decision.H0


def test_normalized_games_per_sample_scales_hypothesis() -> None:
    # Quoting the same per-game nElo for samples of 2 games is a sqrt(2) larger t per sample.
    vals, counts = [0.0, 0.25, 0.5, 0.75, 1.0], [379, 10170, 21828, 10640, 343]
    two = llr(vals, counts, 0, 2, model="normalized", games_per_sample=2)
    one = llr(vals, counts, 0, 2 * math.sqrt(2), model="normalized", games_per_sample=1)
    assert two == pytest.approx(one, abs=1e-9)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: Sprt(5, 0), "elo0 must be below elo1"),
        (lambda: Sprt(0, 5, alpha=0), "alpha and beta"),
        (lambda: Sprt(0, 5, alpha=0.6, beta=0.5), "alpha and beta"),
        (lambda: Sprt(0, 5, model="bayes"), "model must be"),  # type: ignore[arg-type]
        (lambda: Sprt(0, float("inf")), "finite"),
        (lambda: sprt_bounds(1.0, 0.05), "alpha and beta"),
        (lambda: llr_trinomial(0, 0, 0, 0, 5), "all counts are zero"),
        (lambda: llr_trinomial(-1, 2, 3, 0, 5), "non-negative"),
        (lambda: llr_pentanomial([1, 2, 3], 0, 5), "5 entries"),
        (lambda: llr([0.0, 0.5, 1.0], [1, 2, 3], 0, 5, model="x"), "model must be"),  # type: ignore[arg-type]
        (lambda: llr([0.0, 1.0, 0.5], [1, 2, 3], 0, 5), "strictly increasing"),
        (lambda: llr([0.0, 0.5], [1, 2, 3], 0, 5), "equal length"),
        (lambda: llr([0.6, 0.8], [1, 2], 0, 5), "outside the observed scores"),
        (lambda: llr([0.0, 1.0], [1, 2], 0, 5, model="normalized", games_per_sample=0), "positive"),
        (lambda: Sprt(0, 5).scores([]), "non-empty"),
        (lambda: Sprt(0, 5).scores([1.2]), r"\[0, 1\]"),
        (lambda: Sprt(0, 5).scores([0.5], support=[2.0]), "support"),
    ],
)
def test_bad_input_raises(call: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()  # type: ignore[operator]


def test_luck_adjusted_set_scores_may_leave_zero_to_one() -> None:
    """Adjusted scores are never clipped: a set a little above 1 or below 0 is tested as it
    is, and the hypotheses' means stay inside the values."""
    scores = [1.04, 0.97, 0.66, 0.81, -0.02, 0.9, 1.0, 0.75]
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        scores_distribution(scores)
    values, counts = scores_distribution(scores, adjusted=True)
    assert values[0] == -0.02 and values[-1] == 1.04 and counts.sum() == len(scores)
    result = Sprt(0, 50).scores(scores, games_per_sample=6, adjusted=True)
    assert result.llr > 0 and math.isfinite(result.estimate.elo)
