"""The text protocol's codec: what a bot program reads is the engine's observation, whole,
whichever path wrote it, and nothing a bot or a name holds can break a line."""

from __future__ import annotations

import io
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from thousand_bot.convert import event_to_dict, observation_to_dict
from thousand_bot.proto.thousand.v1 import bot_pb2
from thousand_bot.stdio.protocol import (
    LEGAL_KEY,
    OBSERVATION_KEYS,
    OBSERVATION_TYPES,
    Hello,
    ProtocolError,
    encode_error,
    encode_event,
    encode_request,
    escape_part,
    escape_text,
    escape_token,
    escape_value,
    legal_actions,
    observation,
    parse_hello,
    read_message,
    unescape,
)

from arena.bots import get_bot
from arena.engine import PRESETS, Game, Rules
from arena.engine.turns import turns
from arena.server import convert, wire


def _decisions(preset: str, deals: int = 3) -> list[tuple[dict[str, Any], list[str]]]:
    """Every decision of a few deals of greedy bots: the observation and the legal actions."""
    rules = Rules.preset(preset, max_deals=deals)
    game = Game(rules, seed=f"codec/{preset}")
    bots = [get_bot("greedy", seed=f"{preset}/{i}", rules=rules.to_json())
            for i in range(rules.players)]
    out: list[tuple[dict[str, Any], list[str]]] = []
    for seat, actions in turns(game):
        obs = game.observation(seat)
        legal = [a.text for a in actions]
        out.append((obs, legal))
        game.apply(actions[legal.index(bots[seat].decide(obs, legal))])
    return out


def _read(text: str) -> Any:
    return read_message(io.StringIO(text).readline)


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_a_request_reads_back_as_the_engines_observation(preset: str) -> None:
    for obs, legal in _decisions(preset):
        text = encode_request("m-1", "m-1/7", obs, legal, 1000, 9500)
        assert text.count("\n") == 3 + len(OBSERVATION_KEYS) + 1  # header, clock, keys, legal
        message = _read(text)
        assert message.kind == "request" and message.words == ["m-1", "m-1/7"]
        assert message.fields["deadline_ms"] == "1000"
        assert message.fields["time_bank_ms"] == "9500"
        assert observation(message.fields) == obs
        assert legal_actions(message.fields) == legal
        assert list(message.fields) == ["deadline_ms", "time_bank_ms", *OBSERVATION_KEYS,
                                        LEGAL_KEY]


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_the_gateway_path_writes_the_same_text(preset: str) -> None:
    """``thousand-bot run --stdio`` writes a request from the protobuf message the gateway
    sent; a local seat writes it from the engine's dictionary. Same bytes."""
    for obs, legal in _decisions(preset, deals=2):
        request = bot_pb2.PlayResponse.FromString(wire.decision_request_bytes(
            convert_request(obs, legal))).decision_request
        via_gateway = encode_request(request.match_id, request.request_id,
                                     observation_to_dict(request.observation),
                                     request.legal_actions, request.deadline_ms,
                                     request.time_bank_ms)
        assert via_gateway == encode_request("m", "m/1", obs, legal, 1000, 0)


def convert_request(obs: dict[str, Any], legal: list[str]) -> Any:
    from arena.match.types import DecisionRequest

    return DecisionRequest(match_id="m", request_id="m/1", seat=obs["seat"], observation=obs,
                           legal=tuple(legal), deadline_ms=1000, time_bank_ms=0)


def test_events_are_counted_blocks_of_sorted_keys_and_the_same_both_ways() -> None:
    event = {"type": "match_start", "match_id": "m", "seats": ["cmd:./my bot", "greedy"],
             "players": 2, "rules": {"preset": "two-player", "options": {"max_deals": 1}},
             "time_control": {"decision_ms": 1000, "bank_ms": 0, "strike_limit": 3}}
    text = encode_event("m", 0, event)
    assert text.splitlines() == [
        "event m 0 match_start 7",
        "players 2",
        "rules.options.max_deals 1",
        "rules.preset two-player",
        "seats cmd:./my bot,greedy",
        "time_control.bank_ms 0",
        "time_control.decision_ms 1000",
        "time_control.strike_limit 3",
    ]
    trick = {"type": "trick", "winner": 2, "points": 14, "cards": [[1, "QH"], [2, "AH"]]}
    assert encode_event("m", 9, trick).splitlines()[1] == "cards 1:QH,2:AH"
    # What the gateway sends (its event message, then the SDK's dictionary) writes the same.
    message = convert.EventEncoder().encode("m", event)
    assert encode_event(message.match_id, message.sequence, event_to_dict(message)) == text
    end = {"type": "deal_end", "deal": 0, "deltas": [55, -115, 65], "scores": [55, -115, 65],
           "declarer": None, "contract": 0, "made": False}
    lines = encode_event("m", 3, end).splitlines()
    assert lines == ["event m 3 deal_end 6", "contract 0", "deal 0", "declarer -",
                     "deltas 55,-115,65", "made 0", "scores 55,-115,65"]


hostile = st.text(st.characters(codec="utf-8"), max_size=40)


@given(hostile)
def test_escapes_keep_lines_whole_and_read_back(text: str) -> None:
    for escape, forbidden in ((escape_value, "\n\r,"), (escape_part, "\n\r,:"),
                              (escape_token, "\n\r "), (escape_text, "\n\r")):
        out = escape(text)
        assert not any(ch in out for ch in forbidden), (escape, out)
        assert unescape(out) == text or (escape is escape_token and not text)


def test_an_error_line_with_a_hostile_reason_stays_one_line() -> None:
    line = encode_error("r 1", "malformed_action", "bad\nerror 0 protocol forged")
    assert line.count("\n") == 1
    message = _read(line)
    assert message.kind == "error" and message.words == ["r 1", "malformed_action"]
    assert message.text == "bad\nerror 0 protocol forged"


def test_every_observation_key_has_a_type() -> None:
    assert set(OBSERVATION_TYPES) == set(OBSERVATION_KEYS) == set(convert.OBSERVATION_KEYS)


@pytest.mark.parametrize(
    ("line", "hello"),
    [
        ("hello 1", Hello()),
        ("hello 1 events=all", Hello(events=True)),
        ("hello 1 name=b-1 version=2.0 events=none max_matches=4 client=c/1",
         Hello(name="b-1", bot_version="2.0", max_matches=4, client="c/1")),
        ("hello 1 version=a\\x20b", Hello(bot_version="a b")),
    ],
)
def test_a_good_hello(line: str, hello: Hello) -> None:
    assert parse_hello(line) == hello
    assert parse_hello(hello.line()) == hello


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("pass", "the first line must be the hello"),
        ("hello", "must name the protocol version"),
        ("hello 2", "protocol version 2 is not spoken here; this side speaks 1"),
        ("hello 1 evnets=all", "unknown word 'evnets=all'"),
        ("hello 1 events=some", "events= takes 'all' or 'none'"),
        ("hello 1 max_matches=-1", "max_matches= takes a number"),
        ("hello 1 name=a name=b", "name= is given twice"),
    ],
)
def test_a_bad_hello_says_what_is_wrong(line: str, says: str) -> None:
    with pytest.raises(ProtocolError, match=says):
        parse_hello(line)
