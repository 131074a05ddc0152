"""Action and card notation: every kind round-trips, ``10`` is accepted, bad text is named."""

from __future__ import annotations

import pytest

from arena.engine import (
    Action,
    NotationError,
    as_action,
    card_str,
    format_action,
    parse_action,
    parse_card,
)
from arena.engine.actions import KIND_NAMES

# One canonical text per action kind (and a few extra shapes).
CANONICAL = [
    "pass", "bid 100", "bid 105", "blind 120", "look", "redeal", "sell", "keep", "buy 125",
    "talon 1", "talon 2", "give QS 2", "give 9C 0", "give 7D 3", "discard 9H", "bank AD",
    "contract 120", "concede", "trump C", "trump S", "trump H", "trump D", "play KH",
    "play 7C", "play 8S", "marry QD", "half JH", "aces AS", "nines 9D", "crawl TC",
]  # fmt: skip


def test_every_kind_has_a_canonical_example() -> None:
    kinds = {t.split()[0] for t in CANONICAL}
    assert kinds == set(KIND_NAMES)


@pytest.mark.parametrize("text", CANONICAL)
def test_round_trip(text: str) -> None:
    a = parse_action(text)
    assert isinstance(a, Action)
    assert format_action(a) == text
    assert str(a) == text
    assert parse_action(format_action(a)) is a  # interned: one object per action
    assert a.kind_name == text.split()[0]
    assert as_action(text) is a and as_action(a) is a


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("play 10H", "play TH"),
        ("play 10h", "play TH"),
        ("PLAY th", "play TH"),
        ("  marry   kh ", "marry KH"),
        ("give 10S 1", "give TS 1"),
        ("Bid 110", "bid 110"),
        ("discard 10d", "discard TD"),
        ("trump h", "trump H"),
        ("bid 0105", "bid 105"),
    ],
)
def test_accepted_spellings(text: str, canonical: str) -> None:
    assert str(parse_action(text)) == canonical


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "empty action"),
        ("   ", "empty action"),
        ("jump", "unknown action 'jump'"),
        ("bid", "'bid' takes 1 argument(s), got 0"),
        ("bid 100 5", "'bid' takes 1 argument(s), got 2"),
        ("bid ten", "'bid' takes a whole number, got 'ten'"),
        ("bid -5", "value out of range"),
        ("bid 99999", "value out of range"),
        ("pass now", "'pass' takes 0 argument(s), got 1"),
        ("play", "'play' takes 1 argument(s)"),
        ("play 1H", "bad card '1H'"),
        ("play KX", "bad card 'KX'"),
        ("play 6H", "bad card '6H'"),
        ("play 11H", "bad card '11H'"),
        ("play KHH", "bad card"),
        ("give QS", "'give' takes 2 argument(s), got 1"),
        ("give QS x", "'give' takes a seat number, got 'x'"),
        ("give QS 4", "seat out of range: 4"),
        ("give QS -1", "seat out of range"),
        ("trump X", "bad suit 'X'"),
        ("trump HS", "bad suit"),
        ("talon one", "whole number"),
    ],
)
def test_bad_text_raises_notation_error(text: str, fragment: str) -> None:
    with pytest.raises(NotationError) as info:
        parse_action(text)
    assert fragment in str(info.value)
    assert isinstance(info.value, ValueError)


def test_non_text_is_refused() -> None:
    with pytest.raises(NotationError, match="an action is text"):
        parse_action(105)  # type: ignore[arg-type]


def test_every_card_round_trips() -> None:
    for c in range(32):
        name = card_str(c)
        assert parse_card(name) == c
        assert parse_card(name.lower()) == c
        if name[0] == "T":
            assert parse_card("10" + name[1]) == c
        assert str(parse_action(f"play {name}")) == f"play {name}"


def test_ranks_and_suits_order() -> None:
    # Canonical order: suits C S H D, ranks 7 8 9 J Q K T A (low to high).
    assert [card_str(c) for c in range(8)] == ["7C", "8C", "9C", "JC", "QC", "KC", "TC", "AC"]
    assert [card_str(c)[1] for c in range(0, 32, 8)] == ["C", "S", "H", "D"]
