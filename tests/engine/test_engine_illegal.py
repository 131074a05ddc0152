"""Refused input: every refusal is an ``IllegalActionError`` (a ``ValueError``) that says
why, and leaves the game exactly as it was."""

from __future__ import annotations

import pytest
from engine_support import (
    D1_TRICKS,
    apply_all,
    assert_illegal,
    cards,
    d1_deck,
    deck_for,
    snapshot,
)

from arena.engine import Game, IllegalActionError, NotationError, Rules


def classic() -> Game:
    rules = Rules.preset("classic")
    game = Game(rules, seed="i")
    game.deal(d1_deck(rules, 0, 1))
    return game


def test_a_decision_before_the_deal() -> None:
    game = Game(Rules.preset("classic"), seed="i")
    assert game.is_chance and game.to_act is None and game.legal_actions() == []
    assert_illegal(game, "pass", "the next step is dealing (call deal()), not a decision")


def test_dealing_in_the_middle_of_a_deal() -> None:
    game = classic()
    before = snapshot(game)
    with pytest.raises(IllegalActionError, match="cannot deal now: the game is in phase "
                       "auction"):
        game.deal()
    assert snapshot(game) == before


@pytest.mark.parametrize(
    "deck",
    [
        [],
        ["AS"] * 24,
        cards("9C JC QC KC TC AC 9S JS QS KS TS AS 9H JH QH KH TH AH 9D JD QD KD TD"),  # 23
        cards("7C 9C JC QC KC TC AC 9S JS QS KS TS AS 9H JH QH KH TH AH 9D JD QD KD TD"),
    ],
)
def test_an_explicit_deck_must_be_a_permutation(deck: list[str]) -> None:
    game = Game(Rules.preset("classic"), seed="i")
    before = snapshot(game)
    with pytest.raises(IllegalActionError, match="must hold each of the 24 cards exactly "
                       "once"):
        game.deal(deck)
    assert snapshot(game) == before


def test_an_explicit_deck_with_a_bad_card_name() -> None:
    game = Game(Rules.preset("classic"), seed="i")
    with pytest.raises(NotationError):
        game.deal(["XX"] * 24)
    assert game.is_chance and game.deal_index == 0


def test_explicit_deck_as_card_numbers() -> None:
    from arena.engine import parse_card

    rules = Rules.preset("classic")
    game = Game(rules, seed="i")
    game.deal([parse_card(c) for c in d1_deck(rules, 0, 1)])
    assert sorted(game.observation(1)["hand"]) == sorted(
        ["AC", "TC", "AS", "TS", "AH", "KH", "QH"]
    )


def test_bad_text_is_a_notation_error_and_changes_nothing() -> None:
    game = classic()
    before = snapshot(game)
    for text in ("", "bid", "bid x", "play 1H", "fly"):
        with pytest.raises(NotationError):
            game.apply(text)
    assert snapshot(game) == before


@pytest.mark.parametrize(
    ("action", "fragment"),
    [
        ("play AC", "seat 2 does not hold AC"),
        ("play KC", "not legal in phase auction for seat 2"),
        ("give KC 0", "not legal in phase auction for seat 2"),
        ("contract 120", "not legal in phase auction for seat 2"),
        ("talon 1", "not legal in phase auction"),
        ("look", "not legal in phase auction"),
        ("blind 110", "only forehand may bid blind, before looking"),
        ("concede", "only the declarer, after the talon and before giving cards"),
        ("sell", "not legal in phase auction"),
        ("buy 120", "not legal in phase auction"),
        ("redeal", "not legal in phase auction"),
        ("trump H", "not legal in phase auction"),
        ("bid 1000", "above the highest bid allowed for this hand (220)"),
    ],
)
def test_actions_out_of_phase(action: str, fragment: str) -> None:
    assert_illegal(classic(), action, fragment)


def test_the_game_over_refuses_everything() -> None:
    rules = Rules.preset("classic", max_deals=1)
    game = Game(rules, seed="i")
    game.deal(d1_deck(rules, 0, 1))
    apply_all(game, ["pass", "pass", "give 9D 2", "give JD 0", "contract 100", *D1_TRICKS])
    assert game.is_over
    for action in ("pass", "play AC", "bid 105"):
        assert_illegal(game, action, "the game is over")
    with pytest.raises(IllegalActionError, match="cannot deal now: the game is in phase over"):
        game.deal()


def test_seat_and_dealer_ranges() -> None:
    game = classic()
    with pytest.raises(ValueError, match="no seat 3 in a game of 3"):
        game.observation(3)
    with pytest.raises(ValueError, match="no seat -1"):
        game.observation(-1)
    with pytest.raises(ValueError, match="dealer must be a seat from 0 to 2"):
        Game(Rules.preset("classic"), dealer=3)


def test_deck_for_rejects_impossible_requests() -> None:
    rules = Rules.preset("classic")
    with pytest.raises(ValueError, match="named twice"):
        deck_for(rules, {1: "AS", 2: "AS"})
    with pytest.raises(ValueError, match="more than 7 cards"):
        deck_for(rules, {1: "9C JC QC KC TC AC 9S JS"})
    with pytest.raises(ValueError, match="not in this deck"):
        deck_for(rules, {1: "7C"})
