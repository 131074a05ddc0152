"""Property: every seat's stream is the spectator's event stream plus its own view only.

For any preset, seed and match length, each seat of a match played through the gateway
receives exactly the events a spectator receives (same messages, same sequence numbers, in
the same order, none missing, none twice), and its decision requests carry exactly the
engine's observation of that seat, which holds its own cards and nothing of the others'.
The match is replayed in the test with the same seed and the same deterministic answers,
so the expected observations come from the engine itself.
"""

from __future__ import annotations

import hashlib
import itertools
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from thousand_bot.proto.thousand.v1 import bot_pb2, organiser_pb2

from arena.engine import PRESETS, Game, Rules
from arena.engine.turns import turns
from arena.rigs.testing import GatewayThread, RawBot
from arena.server import convert

OBSERVE = Game.observation
_names = itertools.count()


def _choose(hand: list[str], legal: list[str]) -> str:
    """A deterministic policy that the bots and the test's own replay both compute."""
    digest = hashlib.sha256(("|".join(hand) + "/" + "|".join(legal)).encode()).digest()
    return legal[digest[0] % len(legal)]


def _event_bytes(bot: RawBot, match_id: str) -> list[bytes]:
    out = []
    for raw in list(bot.raw):
        message = bot_pb2.PlayResponse.FromString(raw)
        if message.HasField("event") and message.event.match_id == match_id:
            out.append(message.event.SerializeToString())
    return out


def _wait_for(check: Callable[[], bool], timeout: float = 20.0) -> None:
    limit = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < limit, "timed out"
        time.sleep(0.02)


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayThread]:
    gw = GatewayThread(str(tmp_path_factory.mktemp("agree") / "gateway.sqlite3"))
    try:
        yield gw
    finally:
        gw.close()


def _play(gw: GatewayThread, preset: str, seed: str, deals: int, twice: bool) -> list[Any]:
    """Play one match; the spectator's events, after checking every seat's stream."""
    players = Rules.preset(preset).players
    count = players - 1 if twice else players
    names = [f"p{next(_names)}" for _ in range(count)]
    bots = [
        RawBot(
            gw.address,
            gw.register(n),
            answer=lambda r: _choose(list(r.observation.hand), list(r.legal_actions)),
        )
        for n in names
    ]
    try:
        for b in bots:
            b.recv_kind("welcome")
        # With ``twice`` the first bot sits in the first two seats: it is told each event
        # once, and gets the requests of both seats.
        seating = [names[0], *names] if twice else names
        channel, stub, md = gw.organiser()
        with channel:
            match_id = stub.StartMatch(
                organiser_pb2.StartMatchRequest(
                    preset=preset, seed=seed, public_seed=True, bots=seating,
                    max_deals=deals,
                ),
                metadata=md,
            ).match_id
            spectator = [
                r.event
                for r in stub.WatchMatch(
                    organiser_pb2.WatchMatchRequest(match_id=match_id), metadata=md, timeout=120
                )
            ]
        assert spectator[-1].type == "match_end"
        assert spectator[-1].match_end.status == "completed"
        assert [e.sequence for e in spectator] == list(range(len(spectator)))

        # The engine's own view of every decision, in order, per seat.
        game = Game(Rules.preset(preset, max_deals=deals), seed=seed)
        expected: dict[int, list[bot_pb2.DecisionRequest]] = {s: [] for s in range(players)}
        for seat, actions in turns(game):
            observation = OBSERVE(game, seat)
            legal = [str(a) for a in actions]
            expected[seat].append(
                bot_pb2.DecisionRequest(
                    seat=seat,
                    observation=convert.observation_to_proto(observation),
                    legal_actions=legal,
                )
            )
            game.apply(_choose(list(observation["hand"]), legal))

        wanted = [e.SerializeToString() for e in spectator]
        for bot in bots:  # the spectator may be told the end before the seats are
            _wait_for(lambda b=bot: wanted[-1] in _event_bytes(b, match_id))  # type: ignore[misc]
        for index, bot in enumerate(bots):
            seats = [0, 1] if twice and index == 0 else [seating.index(names[index])]
            messages = [bot_pb2.PlayResponse.FromString(raw) for raw in bot.raw]
            events = _event_bytes(bot, match_id)
            assert events == wanted, (preset, seed, names[index])
            requests = [
                m.decision_request
                for m in messages
                if m.HasField("decision_request") and m.decision_request.match_id == match_id
            ]
            got = {s: [r for r in requests if r.seat == s] for s in seats}
            for s in seats:
                assert len(got[s]) == len(expected[s]), (preset, seed, s)
                for have, want in zip(got[s], expected[s], strict=True):
                    assert have.observation == want.observation, (preset, seed, s)
                    assert list(have.legal_actions) == list(want.legal_actions)
                    assert set(have.observation.hand) <= set(want.observation.hand)
        return spectator
    finally:
        for b in bots:
            b.close()


@pytest.mark.parametrize("preset", sorted(PRESETS))
@settings(
    max_examples=4,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    seed=st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=12),
    deals=st.integers(min_value=1, max_value=3),
    twice=st.booleans(),
)
def test_each_seat_sees_the_spectators_events_and_its_own_view(
    gateway: GatewayThread, preset: str, seed: str, deals: int, twice: bool
) -> None:
    _play(gateway, preset, seed, deals, twice)


def test_equal_consecutive_events_all_reach_the_seats(gateway: GatewayThread) -> None:
    """Two-player deals have the declarer discard two cards face down: two equal
    ``discard ??`` events in a row, both of which every seat must be told."""
    events = _play(gateway, "two-player", "discards", 3, False)
    details = [e.detail_json for e in events]
    repeats = [a for a, b in itertools.pairwise(details) if a == b]
    assert any("discard" in d for d in repeats), "no equal consecutive events to check"
