"""The hand-written bytes of a decision request are what the protobuf runtime would write.

The gateway sends every decision request through :mod:`arena.server.wire`; a bot decodes
it with its own protobuf library. So the bytes must decode to exactly the message the
runtime builds from the same request, for every preset and every phase of play, and
anything the fast encoder does not expect must still arrive (by the runtime's path).
"""

from __future__ import annotations

import random

import pytest
from thousand_bot.proto.thousand.v1 import bot_pb2

from arena.engine import Game, Rules
from arena.engine.rules import PRESETS
from arena.match.types import DecisionRequest
from arena.server import convert, wire


def _runtime(request: DecisionRequest) -> bot_pb2.PlayResponse:
    return bot_pb2.PlayResponse(decision_request=convert.decision_request_to_proto(request))


def _requests(preset: str, games: int, seed: int) -> list[DecisionRequest]:
    """Every seat's request at every decision of random games (all phases, every seat's
    view, the declarer's and the others')."""
    rng = random.Random(seed)
    rules = Rules.preset(preset, max_deals=12)
    out: list[DecisionRequest] = []
    for number in range(games):
        game = Game(rules, seed=f"wire/{preset}/{number}")
        while not game.is_over:
            if game.is_chance:
                game.deal()
                continue
            legal = game.legal_actions()
            for seat in range(game.n):
                out.append(
                    DecisionRequest(
                        match_id=f"m-{number:04x}",
                        request_id=f"m-{number:04x}/{len(out)}",
                        seat=seat,
                        observation=game.observation(seat),
                        legal=tuple(a.text for a in legal),
                        deadline_ms=rng.choice([0, 50, 1000]),
                        time_bank_ms=rng.choice([0, 7, 20_000]),
                    )
                )
            game.apply(rng.choice(legal))
    return out


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_the_bytes_are_the_runtimes_for_every_phase_of_every_preset(preset: str) -> None:
    requests = _requests(preset, games=2, seed=len(preset))
    assert len(requests) > 100
    for request in requests:
        fast = wire._fast_request(request)  # the fast path itself, no fallback
        expected = _runtime(request)
        assert bot_pb2.PlayResponse.FromString(fast) == expected
        assert fast == expected.SerializeToString()  # same field order, same bytes


def test_negative_scores_and_large_numbers_encode_as_int32() -> None:
    request = _requests("classic", games=1, seed=1)[0]
    obs = dict(request.observation)
    obs["scores"] = [-120, 2**31 - 1, -(2**31)]
    obs["deal"] = 70_000
    odd = DecisionRequest(**{**request.__dict__, "observation": obs})
    fast = wire._fast_request(odd)
    decoded = bot_pb2.PlayResponse.FromString(fast).decision_request.observation
    assert list(decoded.scores) == [-120, 2**31 - 1, -(2**31)]
    assert decoded.deal == 70_000
    assert fast == _runtime(odd).SerializeToString()


@pytest.mark.parametrize(
    "change",
    [
        {"extra_key": {"a": 1}},  # an unknown key travels in extra_json
        {"scores": [1.5, 2, 3]},  # a value of another type
        {"blind": 1},  # a number where a bool belongs
        {"trick": [[0, "QS", "x"]]},  # a malformed pair
        {"deal": 2**40},  # beyond int32
        {"hand": [["QS"]]},  # an unhashable item where a string belongs
        {"scores": [[1], 2, 3]},
    ],
)
def test_anything_unexpected_goes_the_runtimes_way(change: dict[str, object]) -> None:
    request = _requests("classic", games=1, seed=2)[5]
    obs = {**request.observation, **change}
    odd = DecisionRequest(**{**request.__dict__, "observation": obs})
    with pytest.raises((wire.Unencodable, KeyError, TypeError)):
        wire._fast_request(odd)
    assert wire.decision_request_bytes(odd) == _runtime(odd).SerializeToString()


def test_a_missing_key_goes_the_runtimes_way() -> None:
    request = _requests("classic", games=1, seed=3)[0]
    obs = dict(request.observation)
    del obs["hand"]
    odd = DecisionRequest(**{**request.__dict__, "observation": obs})
    assert wire.decision_request_bytes(odd) == _runtime(odd).SerializeToString()


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_a_seats_encoder_writes_the_same_bytes_as_from_scratch(preset: str) -> None:
    """Each seat's encoder, fed that seat's requests in order (as the hub does), writes
    what encoding every request from scratch writes, though it rewrites only what
    changed."""
    requests = _requests(preset, games=2, seed=len(preset) + 7)
    encoders: dict[tuple[str, int], wire.ObservationEncoder] = {}
    for request in requests:
        encoder = encoders.setdefault(
            (request.match_id, request.seat), wire.ObservationEncoder()
        )
        assert wire._fast_request(request, encoder) == wire._fast_request(request)


def test_an_encoder_checks_the_type_of_an_unchanged_looking_value() -> None:
    """``1 == True``: a number where the last request had a bool is still refused, and the
    request takes the runtime's way."""
    request = _requests("classic", games=1, seed=3)[0]
    encoder = wire.ObservationEncoder()
    blind = request.observation["blind"]
    assert type(blind) is bool
    wire._fast_request(request, encoder)
    odd = DecisionRequest(
        **{**request.__dict__, "observation": {**request.observation, "blind": int(blind)}}
    )
    with pytest.raises(wire.Unencodable):
        wire._fast_request(odd, encoder)
    assert wire.decision_request_bytes(odd, encoder) == _runtime(odd).SerializeToString()
    # and the encoder still writes the engine's own requests right afterwards
    assert wire._fast_request(request, encoder) == wire._fast_request(request)


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_the_game_encoder_writes_what_the_observation_would_for_every_seat(preset: str) -> None:
    """The remote seats' encoder reads the game itself instead of its observation: what
    it writes must be, byte for byte, the observation the engine shows that seat (its
    hand, the talon, the declarer's own cards, face-down trick cards), whether the seat is
    asked at every decision or only when it is to act (as in a match, where much changes
    in between)."""
    rng = random.Random(len(preset) + 11)
    rules = Rules.preset(preset, max_deals=12)
    checked = 0
    for number in range(3):
        game = Game(rules, seed=f"wire-game/{preset}/{number}")
        every = [wire.GameObservationEncoder() for _ in range(game.n)]
        acting = [wire.GameObservationEncoder() for _ in range(game.n)]
        while not game.is_over:
            if game.is_chance:
                game.deal()
                continue
            legal = game.legal_actions()
            texts = tuple(a.text for a in legal)
            for seat in range(game.n):
                expected = wire.observation_bytes(game.observation(seat))
                assert every[seat].encode(game, seat) == expected
                checked += 1
            seat = game.to_act
            assert seat is not None
            request = DecisionRequest(
                match_id=f"m-{number:04x}", request_id=f"m-{number:04x}/{checked}",
                seat=seat, observation=game.observation(seat), legal=texts,
                deadline_ms=50, time_bank_ms=1000,
            )
            fast = wire.game_request_bytes(
                request.match_id, request.request_id, seat, game, texts, 50, 1000, acting[seat]
            )
            assert fast == _runtime(request).SerializeToString()
            game.apply(rng.choice(legal))
    assert checked > 300


def test_the_game_encoder_refuses_a_seat_the_game_does_not_have() -> None:
    game = Game(Rules.preset("classic"), seed="wire-game/seat")
    game.deal()
    with pytest.raises(ValueError, match="no seat 3"):
        wire.GameObservationEncoder().encode(game, 3)
