"""Live openskill league: ordering, ties, display scale and persistence."""

from __future__ import annotations

import json
import math

import pytest

from arena.ratings import ELO_PER_NAT, GameResult, LiveLeague


def games() -> list[GameResult]:
    out = []
    for g in range(60):
        seats = [["ace", "bee", "cid"], ["bee", "cid", "ace"], ["cid", "ace", "bee"]][g % 3]
        points = {"ace": 1000.0, "bee": 600.0, "cid": 200.0}
        if g % 5 == 0:
            points = {"ace": 300.0, "bee": 1000.0, "cid": 600.0}
        out.append(GameResult.from_scores(seats, [points[p] for p in seats], group=g // 6))
    return out


def test_newcomer_is_centred_with_prior_interval() -> None:
    league = LiveLeague()
    r = league.rating("nobody")
    assert r.rating == 0.0 and r.games == 0
    assert r.ci_low == pytest.approx(-r.ci_high)
    z = 1.959963984540054
    assert r.ci_high == pytest.approx(z * (25 / 3) * league.elo_per_mu)


def test_display_scale_matches_plackett_luce_pairwise_logit() -> None:
    league = LiveLeague(beta=4.0, seats=3)
    assert league.elo_per_mu == pytest.approx(ELO_PER_NAT / (4.0 * math.sqrt(3)))


def test_stronger_player_rises_and_interval_narrows() -> None:
    league = LiveLeague()
    league.update_many(games())
    table = league.table()
    assert [r.player for r in table] == ["ace", "bee", "cid"]
    assert table[0].rating > 0 > table[-1].rating
    assert all(r.games == 60 for r in table)
    assert league.games == 60
    fresh = league.rating("nobody")
    assert table[0].ci_high - table[0].ci_low < fresh.ci_high - fresh.ci_low
    assert league.expected_score("ace", "cid") > 0.5
    assert league.expected_score("ace", "cid") == pytest.approx(
        1 - league.expected_score("cid", "ace")
    )


def test_tie_in_two_player_game_keeps_equal_players_equal() -> None:
    league = LiveLeague(seats=2)
    league.update(GameResult(("x", "y"), (500.0, 500.0), (1, 1)))
    assert league.rating("x").rating == pytest.approx(league.rating("y").rating)


def test_four_seat_games_supported() -> None:
    league = LiveLeague(seats=4)
    league.update(GameResult.from_scores(["a", "b", "c", "d"], [4, 3, 2, 1]))
    ratings = [league.rating(p).rating for p in "abcd"]
    assert ratings == sorted(ratings, reverse=True)


def test_state_roundtrip_through_json() -> None:
    league = LiveLeague(tau=0.1, confidence=0.9)
    results = games()
    league.update_many(results[:30])
    restored = LiveLeague.from_dict(json.loads(json.dumps(league.to_dict())))
    assert restored.to_dict() == league.to_dict()
    league.update_many(results[30:])
    restored.update_many(results[30:])
    assert restored.table() == league.table()


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda s: s.update(version=99), "version"),
        (lambda s: s.pop("params"), "'params'"),
        (lambda s: s["params"].pop("beta"), "missing parameter 'beta'"),
        (lambda s: s.update(games=-1), "'games'"),
        (lambda s: s["players"].update(ace={"mu": 1.0, "sigma": -1.0, "games": 1}), "ace"),
        (lambda s: s["players"].update(ace={"mu": "x", "sigma": 1.0, "games": 1}), "ace"),
        (lambda s: s["params"].update(seats=7), "seats"),
    ],
)
def test_bad_state_raises(mutate: object, message: str) -> None:
    league = LiveLeague()
    league.update_many(games()[:3])
    state = json.loads(json.dumps(league.to_dict()))
    mutate(state)  # type: ignore[operator]
    with pytest.raises(ValueError, match=message):
        LiveLeague.from_dict(state)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"sigma": 0.0}, "sigma and beta"),
        ({"beta": -1.0}, "sigma and beta"),
        ({"tau": float("nan")}, "finite"),
        ({"seats": 5}, "seats"),
        ({"confidence": 1.0}, "confidence"),
    ],
)
def test_bad_parameters_raise(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LiveLeague(**kwargs)  # type: ignore[arg-type]


def test_update_rejects_non_results() -> None:
    with pytest.raises(ValueError, match="expected GameResult"):
        LiveLeague().update(("a", "b"))  # type: ignore[arg-type]
