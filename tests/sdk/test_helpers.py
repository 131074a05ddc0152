"""Card and action helpers, and the Bot base class's dispatch."""

from __future__ import annotations

import pytest
from thousand_bot import Bot
from thousand_bot.bot import first_choice
from thousand_bot.cards import (
    beats,
    by_suit,
    card_of,
    hand_points,
    marriages,
    normalize_card,
    number_of,
    parse_action,
    sort_hand,
    trick_winner,
    with_verb,
)
from thousand_bot.examples import FirstLegal, Greedy, Random

from arena.engine import Rules, format_action
from arena.engine import parse_action as engine_parse


def test_cards() -> None:
    assert normalize_card("10h") == "TH"
    assert normalize_card(" qs ") == "QS"
    with pytest.raises(ValueError, match="not a card"):
        normalize_card("1X")
    assert hand_points(["AS", "TS", "KS", "QS", "JS", "9S"]) == 30
    assert sort_hand(["9H", "AC", "TC", "KS"]) == ["AC", "TC", "KS", "9H"]
    assert by_suit(["9H", "AH"])["H"] == ["AH", "9H"]
    assert marriages(["KH", "QH", "KS", "9S"]) == ["H"]
    assert beats("TS", "KS", None) and not beats("KS", "TS", None)
    assert beats("9H", "AS", "H") and not beats("AD", "9S", "H")
    assert trick_winner([[0, "KS"], [1, "AS"], [2, "9H"]], "H") == 2
    assert trick_winner([[0, "KS"], [1, "AS"], [2, "9H"]], None) == 1


@pytest.mark.parametrize(
    "text",
    ["pass", "bid 105", "blind 120", "give QS 2", "discard 9H", "trump H", "play KH",
     "marry QH", "contract 120", "concede", "talon 1", "buy 125", "crawl 9H"],
)  # fmt: skip
def test_actions_parse_like_the_engine(text: str) -> None:
    action = parse_action(text.upper() if text.startswith("play") else text)
    assert action.text == format_action(engine_parse(text))


def test_action_parts() -> None:
    assert card_of("give QS 2") == "QS" and number_of("give QS 2") == 2
    assert number_of("bid 105") == 105 and card_of("bid 105") is None
    assert with_verb(["pass", "bid 105", "bid 110"], "bid") == ["bid 105", "bid 110"]
    with pytest.raises(ValueError, match="not an action"):
        parse_action("dance")


class Recorder(Bot):
    def __init__(self) -> None:
        self.calls: list[str] = []

    def bid(self, observation: dict, legal: list[str]) -> str:  # type: ignore[type-arg]
        self.calls.append("bid")
        return legal[0]

    def exchange(self, observation: dict, legal: list[str]) -> str:  # type: ignore[type-arg]
        self.calls.append("exchange")
        return legal[-1]

    def contract(self, observation: dict, legal: list[str]) -> str:  # type: ignore[type-arg]
        self.calls.append("contract")
        return legal[0]

    def play(self, observation: dict, legal: list[str]) -> str:  # type: ignore[type-arg]
        self.calls.append("play")
        return legal[0]


def test_dispatch_by_kind_of_decision() -> None:
    bot = Recorder()
    bot.decide({}, ["pass", "bid 105"])
    bot.decide({}, ["concede", "give KC 1", "give QS 1"])
    bot.decide({}, ["contract 120", "concede"])
    bot.decide({}, ["play 9H", "marry KH"])
    assert bot.calls == ["bid", "exchange", "contract", "play"]


def test_the_default_never_concedes() -> None:
    assert first_choice(["concede", "give KC 1"]) == "give KC 1"
    assert first_choice(["concede"]) == "concede"
    assert Bot().decide({}, ["concede", "contract 120"]) == "contract 120"


@pytest.mark.parametrize("cls", [FirstLegal, Greedy, Random])
def test_example_bots_play_legal_moves_in_every_preset(cls: type[Bot]) -> None:
    """The SDK's Bot objects also plug straight into the in-process referee."""
    import asyncio

    from arena.match.types import MatchSpec
    from arena.referee.runner import run_match
    from arena.referee.seats import InProcessSeat

    for preset in ("classic", "two-player", "two-player-9"):
        rules = Rules.preset(preset, max_deals=3)
        spec = MatchSpec("m", rules.to_json(), f"ex/{preset}", tuple(["x"] * rules.players))
        seats = [InProcessSeat(cls(), "x") for _ in range(rules.players)]
        result = asyncio.run(run_match(spec, seats))
        assert result.status == "completed", preset
        assert all(s.strikes == 0 for s in result.seat_stats), preset


def test_events_are_asked_for_only_by_bots_that_follow_them() -> None:
    class Follower(Bot):
        def on_event(self, event: dict) -> None:  # type: ignore[type-arg]
            pass

    assert not Bot().wants_events()
    assert not Greedy().wants_events()
    assert Follower().wants_events()
