"""The barrel (бочка, kott) and the end of the game, on the reference deal D1.

D1 (see ``engine_support``): the declarer makes its contract with 203 points, R (third
to play) scores 17 -> 15 and L scores nothing.
"""

from __future__ import annotations

from typing import Any

import pytest
from engine_support import (
    D1_TRICKS,
    D1_TRICKS_PLAIN,
    apply_all,
    cards,
    d1_deck,
    d1_gives,
    deck_for,
    play_d1,
    plays_only,
    resume,
)

from arena.engine import Game, Rules


def new(scores: list[int], sitting: tuple[int, ...] = (), tries: int | None = None,
        **options: Any) -> Game:
    """A classic game resumed at ``scores`` with the ``sitting`` seats on the barrel."""
    game = Game(Rules.preset("classic", **options), seed="b")
    return resume(game, scores, barrel=sitting, tries=tries)


def on_barrel(game: Game) -> list[bool]:
    return list(game.observation(0)["barrel"])


def test_003_reaching_880_sits_on_the_barrel_held_at_880() -> None:
    game = new([0, 800, 0])
    play_d1(game, 1)
    assert game.scores == [15, 880, 0]
    assert on_barrel(game) == [False, True, False]


def test_003_barrel_at_900_by_option() -> None:
    game = new([0, 800, 0], barrel=900)
    play_d1(game, 1)
    assert game.scores == [15, 900, 0] and on_barrel(game) == [False, True, False]


def test_003_on_the_barrel_a_small_contract_does_not_finish() -> None:
    game = new([0, 880, 0], sitting=(1,))
    play_d1(game, 1)  # 100 < 120
    assert game.scores == [15, 880, 0] and not game.is_over
    assert on_barrel(game) == [False, True, False]


def test_003_on_the_barrel_a_contract_of_120_wins() -> None:
    game = new([0, 880, 0], sitting=(1,))
    play_d1(game, 1, 120)
    assert game.is_over and game.scores == [15, 1000, 0]
    assert game.ranking() == [2, 1, 3]


def test_barrel_min_contract() -> None:
    game = new([0, 880, 0], sitting=(1,), barrel_min_contract=150)
    play_d1(game, 1, 120)  # 1000 reached, but with less than 150
    assert not game.is_over and game.scores == [15, 880, 0]
    game = new([0, 880, 0], sitting=(1,), barrel_min_contract=150)
    play_d1(game, 1, 150)
    assert game.is_over and game.scores == [15, 1030, 0]


def test_003_opponent_on_the_barrel_scores_nothing() -> None:
    game = new([880, 0, 0], sitting=(0,))
    play_d1(game, 1)
    assert game.scores == [880, 100, 0]


def test_003_three_deals_on_the_barrel_then_back_to_zero() -> None:
    # 003 l.35: three deals to reach 1000, or the total drops to 0.
    game = new([0, 800, 0])
    play_d1(game, 1)  # climbs: 880
    assert game.scores[1] == 880 and on_barrel(game)[1]
    play_d1(game, 1)  # try 1: 105 is not enough
    play_d1(game, 1)  # try 2
    assert game.scores[1] == 880 and on_barrel(game)[1]
    play_d1(game, 1)  # try 3: falls
    assert game.scores[1] == 0 and not on_barrel(game)[1]


@pytest.mark.parametrize(("fall", "score"), [("zero", 0), ("minus-120", 760)])
def test_003_falling_off_the_barrel(fall: str, score: int) -> None:
    game = new([880, 0, 0], sitting=(0,), tries=1, barrel_fall=fall)
    play_d1(game, 1)
    assert game.scores == [score, 100, 0]
    assert on_barrel(game) == [False, False, False]


def test_003_climbing_knocks_off_the_one_sitting_there() -> None:
    # 003 l.76: another player climbing on the barrel knocks the first off.
    game = new([0, 800, 880], sitting=(2,), barrel_knock_off=True)
    play_d1(game, 1)
    assert game.scores == [15, 880, 0]
    assert on_barrel(game) == [False, True, False]
    game = new([0, 800, 880], sitting=(2,))
    play_d1(game, 1)
    assert game.scores == [15, 880, 880]
    assert on_barrel(game) == [False, True, True]


def test_003_two_climbing_at_once_both_fall() -> None:
    # 003 l.77: 900 and 885 in the same deal.
    game = new([870, 800, 0], barrel_both_fall=True)
    play_d1(game, 1)
    assert game.scores == [0, 0, 0]
    assert on_barrel(game) == [False, False, False]
    game = new([870, 800, 0])
    play_d1(game, 1)
    assert game.scores == [880, 880, 0]
    assert on_barrel(game) == [True, True, False]


@pytest.mark.parametrize(("reset", "score"), [(None, 760), (1, 0), (2, 760)])
def test_003_falling_three_times_resets_to_zero(reset: int | None, score: int) -> None:
    # 003 l.75: after falling off the barrel that many times the total goes to 0.
    game = new([880, 0, 0], sitting=(0,), tries=1, barrel_fall="minus-120",
               barrel_falls_reset=reset)
    play_d1(game, 1)
    assert game.scores[0] == score


def test_contracts_only_barrel_in_classic() -> None:
    game = new([900, 0, 0], sitting=(0,), barrel_mode="contracts-only")
    play_d1(game, 1)
    assert game.scores == [900, 100, 0]


def test_no_barrel() -> None:
    game = new([0, 950, 0], barrel=None)
    play_d1(game, 1)
    assert game.is_over and game.scores == [15, 1050, 0]


def test_without_barrel_an_opponent_can_win_on_points() -> None:
    game = new([990, 0, 0], barrel=None)
    play_d1(game, 1)
    assert game.is_over and game.ranking() == [1, 2, 3]


def test_a_declarer_below_the_barrel_may_jump_to_1000() -> None:
    game = new([0, 870, 0])
    play_d1(game, 1, 150)
    assert game.is_over and game.scores == [15, 1020, 0]


def test_an_opponent_jumping_over_1000_sits_on_the_barrel_by_option() -> None:
    # The earlier reading (barrel_jump "contract"); 003's is in test_engine_texts.
    game = new([990, 0, 0], barrel_jump="contract")
    play_d1(game, 1)
    assert not game.is_over and game.scores == [880, 100, 0]
    assert on_barrel(game) == [True, False, False]


# --------------------------------------------------------------------------- talon mode


def talon_mode(**options: Any) -> Game:
    return new([0, 0, 880], sitting=(2,), barrel_mode="talon", **options)


def test_003_barrel_player_takes_the_talon_without_an_auction() -> None:
    # 003 l.278-279: the barrel player gets the talon without bidding and must make 121.
    game = talon_mode()
    game.deal(d1_deck(game.rules, 0, 2))
    assert game.phase_name == "exchange" and game.to_act == 2
    obs = game.observation(0)
    assert (obs["declarer"], obs["contract"]) == (2, 120)
    assert [e for e in game.events if e.get("auto")] == [
        {"type": "action", "seat": 2, "action": "bid 120", "auto": True}
    ]
    apply_all(game, d1_gives(game.rules, 0, 2))
    assert game.phase_name == "play"  # no raise for an imposed contract
    apply_all(game, D1_TRICKS)
    assert game.is_over and game.scores[2] == 1000


def all_aces_and_tens(game: Game) -> None:
    """Seat 2 holds every ace and ten after the talon and leads them: exactly 120."""
    game.deal(deck_for(game.rules, {2: "AC TC AS TS AH TH AD"}, "TD 9C 9S"))
    apply_all(game, ["give 9C 0", "give 9S 1"])
    for lead in cards("AC TC AS TS AH TH AD TD"):
        apply_all(game, [f"play {lead}"])
        apply_all(game, [plays_only(game)[0]])
        apply_all(game, [plays_only(game)[0]])


def test_003_barrel_talon_120_is_not_enough() -> None:
    game = talon_mode()
    all_aces_and_tens(game)
    assert game.observation(0)["points_taken"][2] == 120
    assert not game.is_over and game.scores[2] == 880


def test_003_barrel_talon_third_failure_costs_120() -> None:
    # 003 l.280: two failures cost nothing; the third: 880 - 120 = 760.
    game = new([0, 0, 880], sitting=(2,), tries=1, barrel_mode="talon",
               barrel_fall="minus-120")
    game.deal(d1_deck(game.rules, 0, 2))
    apply_all(game, [*d1_gives(game.rules, 0, 2), *D1_TRICKS_PLAIN])  # 103 < 121
    assert game.scores[2] == 760
    assert on_barrel(game) == [False, False, False]


def test_knock_off_does_not_depend_on_seat_numbers() -> None:
    # Seat 0 climbs to 885 and seat 1 to 900 in the same deal.
    game = new([870, 800, 0], barrel_knock_off=True)
    play_d1(game, 1)
    assert game.scores == [880, 880, 0]
    assert on_barrel(game) == [True, True, False]
