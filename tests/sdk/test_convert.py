"""A bot receives exactly the observation the engine made, after a trip through protobuf."""

from __future__ import annotations

import hashlib
import json

import pytest
from thousand_bot.convert import event_to_dict, observation_to_dict
from thousand_bot.proto.thousand.v1 import bot_pb2 as sdk_bot_pb2

from arena.engine import PRESETS, Game, Rules
from arena.match.types import DecisionRequest
from arena.server import wire
from arena.server.convert import EventEncoder, decision_request_to_proto, observation_to_proto


def _pick(legal: list[str], step: int) -> str:
    digest = hashlib.sha256(f"{step}/{'|'.join(legal)}".encode()).digest()
    return legal[digest[0] % len(legal)]


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_observations_survive_the_wire(preset: str) -> None:
    game = Game(Rules.preset(preset, max_deals=3), seed=f"wire/{preset}")
    step = 0
    while not game.is_over and step < 400:
        if game.is_chance:
            game.deal()
            continue
        for seat in range(game.n):
            obs = game.observation(seat)
            data = observation_to_proto(obs).SerializeToString()
            back = observation_to_dict(
                sdk_bot_pb2.DecisionRequest.FromString(
                    decision_request_to_proto(
                        DecisionRequest("m", "r", seat, obs, (), 1, 1)
                    ).SerializeToString()
                ).observation
            )
            assert back == obs, (preset, step, seat)
            assert len(data) < 4096
            # The gateway's own bytes (arena.server.wire) arrive the same.
            sent = wire.decision_request_bytes(DecisionRequest("m", "r", seat, obs, (), 1, 1))
            response = sdk_bot_pb2.PlayResponse.FromString(sent)
            assert observation_to_dict(response.decision_request.observation) == obs
        legal = [str(a) for a in game.legal_actions()]
        game.apply(_pick(legal, step))
        step += 1
    assert step > 10


def test_unknown_and_misfit_keys_travel_as_json() -> None:
    obs = {"seat": 1, "hand": ["QS"], "future_key": {"x": [1, 2]}, "barrel": [1, 0]}
    back = observation_to_dict(
        sdk_bot_pb2.DecisionRequest.FromString(
            decision_request_to_proto(
                DecisionRequest("m", "r", 1, obs, ("pass",), 1, 1)
            ).SerializeToString()
        ).observation
    )
    assert back["future_key"] == {"x": [1, 2]}
    assert back["barrel"] == [1, 0]  # ints where the field holds booleans: kept as sent
    assert back["hand"] == ["QS"]


def test_events_carry_their_deal_and_drop_secrets() -> None:
    encoder = EventEncoder()
    first = encoder.encode("m", {"type": "match_start", "seats": ["a", "b"], "seed": "s3cr3t"})
    deal = encoder.encode("m", {"type": "deal_start", "deal": 4, "dealer": 2})
    act = encoder.encode("m", {"type": "action", "seat": 1, "action": "give ?? 2", "hands": [1]})
    assert "s3cr3t" not in first.SerializeToString().decode("utf-8", "replace")
    assert list(first.match_start.bots) == ["a", "b"]
    assert (deal.sequence, deal.deal_start.deal) == (1, 4)
    assert act.action.deal == 4 and act.action.action == "give ?? 2"
    event = event_to_dict(act)
    assert event == {
        "type": "action",
        "seat": 1,
        "action": "give ?? 2",
        "match_id": "m",
        "sequence": 2,
    }
    assert "hands" not in json.loads(act.detail_json)
