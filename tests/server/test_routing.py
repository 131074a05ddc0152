"""Decision requests reach the right bot instance and answers come back by request id.

These tests play the referee's part by hand: they call ``RemoteSeat.decide`` on the
gateway's loop and answer with bare protocol clients over a real socket.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue

import grpc
import pytest
from thousand_bot.proto.thousand.v1 import bot_pb2

from arena.match.types import DecisionRequest
from arena.rigs.testing import GatewayThread, RawBot
from arena.server.hub import RemoteSeat

OBS = {"seat": 0, "hand": ["QS", "KS"], "phase": "play", "to_act": 0}
LEGAL = ("play QS", "play KS")


def request(rid: str, match: str = "m1", seat: int = 0) -> DecisionRequest:
    return DecisionRequest(
        match_id=match,
        request_id=rid,
        seat=seat,
        observation=dict(OBS, seat=seat),
        legal=LEGAL,
        deadline_ms=1000,
        time_bank_ms=5000,
    )


def ask(gw: GatewayThread, bot: str, req: DecisionRequest) -> concurrent.futures.Future[str]:
    return gw.submit(RemoteSeat(gw.gateway.hub, bot).decide(req))


def connect(gw: GatewayThread, token: str, **hello: object) -> RawBot:
    bot = RawBot(gw.address, token, bot_pb2.Hello(**hello))  # type: ignore[arg-type]
    bot.recv_kind("welcome")
    return bot


def test_answer_reaches_the_referee(gateway: GatewayThread) -> None:
    bot = connect(gateway, gateway.register("alice"))
    answer = ask(gateway, "alice", request("r1"))
    msg = bot.recv_kind("decision_request").decision_request
    assert (msg.request_id, msg.match_id, list(msg.legal_actions)) == ("r1", "m1", list(LEGAL))
    assert list(msg.observation.hand) == ["QS", "KS"]
    bot.decide("r1", "play KS")
    assert answer.result(10) == "play KS"
    bot.close()


def test_answers_are_matched_by_request_id_not_order(gateway: GatewayThread) -> None:
    bot = connect(gateway, gateway.register("alice"))
    first = ask(gateway, "alice", request("r1", "m1"))
    second = ask(gateway, "alice", request("r2", "m2"))
    ids = {bot.recv_kind("decision_request").decision_request.request_id for _ in range(2)}
    assert ids == {"r1", "r2"}
    bot.decide("r2", "play QS")
    bot.decide("r1", "play KS")
    assert second.result(10) == "play QS"
    assert first.result(10) == "play KS"
    bot.close()


def test_spelling_is_normalised(gateway: GatewayThread) -> None:
    bot = connect(gateway, gateway.register("alice"))
    answer = ask(gateway, "alice", request("r1"))
    bot.recv_kind("decision_request")
    bot.decide("r1", "PLAY  qs")
    assert answer.result(10) == "play QS"
    bot.close()


@pytest.mark.parametrize(
    ("action", "code", "passed_on"),
    [
        ("dance wildly", bot_pb2.ERROR_CODE_MALFORMED_ACTION, "dance wildly"),
        ("", bot_pb2.ERROR_CODE_MALFORMED_ACTION, ""),
        ("play AH", bot_pb2.ERROR_CODE_ILLEGAL_ACTION, "play AH"),
        ("bid 120", bot_pb2.ERROR_CODE_ILLEGAL_ACTION, "bid 120"),
    ],
)
def test_bad_answers_get_an_error_and_go_to_the_referee(
    gateway: GatewayThread, action: str, code: int, passed_on: str
) -> None:
    """The gateway explains; the referee (which gets the text) plays the fallback."""
    bot = connect(gateway, gateway.register("alice"))
    answer = ask(gateway, "alice", request("r1"))
    bot.recv_kind("decision_request")
    bot.decide("r1", action)
    error = bot.recv_kind("error").error
    assert error.request_id == "r1"
    assert error.code == code
    assert "fallback" in error.reason
    assert answer.result(10) == passed_on
    bot.close()


def test_unknown_and_repeated_request_ids_get_an_error(gateway: GatewayThread) -> None:
    bot = connect(gateway, gateway.register("alice"))
    bot.decide("never-sent", "pass")
    error = bot.recv_kind("error").error
    assert (error.request_id, error.code) == ("never-sent", bot_pb2.ERROR_CODE_UNKNOWN_REQUEST)
    answer = ask(gateway, "alice", request("r1"))
    bot.recv_kind("decision_request")
    bot.decide("r1", "play QS")
    assert answer.result(10) == "play QS"
    bot.decide("r1", "play KS")
    error = bot.recv_kind("error").error
    assert error.code == bot_pb2.ERROR_CODE_UNKNOWN_REQUEST
    bot.close()


def test_a_second_hello_is_a_protocol_error(gateway: GatewayThread) -> None:
    bot = connect(gateway, gateway.register("alice"))
    bot.send(bot_pb2.PlayRequest(hello=bot_pb2.Hello()))
    assert bot.recv_kind("error").error.code == bot_pb2.ERROR_CODE_PROTOCOL
    bot.send(bot_pb2.PlayRequest())
    assert bot.recv_kind("error").error.code == bot_pb2.ERROR_CODE_PROTOCOL
    bot.close()


def test_a_bot_cannot_answer_or_see_another_bots_request(gateway: GatewayThread) -> None:
    alice = connect(gateway, gateway.register("alice"))
    mallory = connect(gateway, gateway.register("mallory"))
    answer = ask(gateway, "alice", request("r-alice"))
    assert alice.recv_kind("decision_request").decision_request.request_id == "r-alice"
    mallory.decide("r-alice", "play QS")
    error = mallory.recv_kind("error").error
    assert error.code == bot_pb2.ERROR_CODE_UNKNOWN_REQUEST
    assert not answer.done()
    alice.decide("r-alice", "play KS")
    assert answer.result(10) == "play KS"
    # mallory saw nothing of alice's request
    assert all(b"r-alice" not in raw or b"not waiting" in raw for raw in mallory.raw)
    assert not any(
        bot_pb2.PlayResponse.FromString(raw).HasField("decision_request") for raw in mallory.raw
    )
    alice.close()
    mallory.close()


def test_many_matches_over_one_connection(gateway: GatewayThread) -> None:
    bot = connect(gateway, gateway.register("alice"))
    answers = {f"r{i}": ask(gateway, "alice", request(f"r{i}", f"m{i}")) for i in range(50)}
    seen = set()
    for _ in range(50):
        msg = bot.recv_kind("decision_request").decision_request
        seen.add(msg.match_id)
        bot.decide(msg.request_id, "play QS" if int(msg.request_id[1:]) % 2 else "play KS")
    assert len(seen) == 50
    for rid, fut in answers.items():
        assert fut.result(10) == ("play QS" if int(rid[1:]) % 2 else "play KS")
    bot.close()


def test_matches_spread_over_instances_and_stick_to_one(gateway: GatewayThread) -> None:
    token = gateway.register("alice")
    bots = [connect(gateway, token) for _ in range(3)]
    futures = [ask(gateway, "alice", request(f"a{i}", f"m{i}")) for i in range(6)]
    holder: dict[str, int] = {}
    for index, bot in enumerate(bots):
        for _ in range(2):
            msg = bot.recv_kind("decision_request").decision_request
            holder[msg.match_id] = index
            bot.decide(msg.request_id, "play QS")
    assert sorted(holder) == [f"m{i}" for i in range(6)]
    assert all(f.result(10) == "play QS" for f in futures)
    # A later request of a match goes to the instance that holds it.
    again = ask(gateway, "alice", request("b3", "m3"))
    msg = bots[holder["m3"]].recv_kind("decision_request").decision_request
    assert msg.request_id == "b3"
    bots[holder["m3"]].decide("b3", "play KS")
    assert again.result(10) == "play KS"
    for bot in bots:
        bot.close()


def test_max_concurrent_matches_is_respected(gateway: GatewayThread) -> None:
    token = gateway.register("alice")
    small = connect(gateway, token, max_concurrent_matches=1)
    first = ask(gateway, "alice", request("r1", "m1"))
    small.recv_kind("decision_request")
    second = ask(gateway, "alice", request("r2", "m2"))  # no room: waits for an instance
    big = connect(gateway, token)
    assert big.recv_kind("decision_request").decision_request.request_id == "r2"
    small.decide("r1", "play QS")
    big.decide("r2", "play KS")
    assert (first.result(10), second.result(10)) == ("play QS", "play KS")
    small.close()
    big.close()


def test_a_slow_bot_times_out_while_other_matches_go_on(gateway: GatewayThread) -> None:
    slow = connect(gateway, gateway.register("slow"))
    fast = connect(gateway, gateway.register("fast"))

    async def with_deadline() -> str:
        seat = RemoteSeat(gateway.gateway.hub, "slow")
        try:
            return await asyncio.wait_for(seat.decide(request("s1", "m-slow")), 0.5)
        except TimeoutError:
            return "timed out"

    slow_answer = gateway.submit(with_deadline())
    slow.recv_kind("decision_request")
    for i in range(5):
        answer = ask(gateway, "fast", request(f"f{i}", f"m-fast-{i}"))
        fast.decide(fast.recv_kind("decision_request").decision_request.request_id, "play QS")
        assert answer.result(10) == "play QS"
    assert slow_answer.result(10) == "timed out"
    # The late answer is refused: the referee no longer waits for it.
    slow.decide("s1", "play QS")
    assert slow.recv_kind("error").error.code == bot_pb2.ERROR_CODE_UNKNOWN_REQUEST
    slow.close()
    fast.close()


def test_disconnect_and_reconnect(gateway: GatewayThread) -> None:
    token = gateway.register("alice")
    first = connect(gateway, token)
    pending = ask(gateway, "alice", request("r1", "m1"))
    first.recv_kind("decision_request")
    first.close()
    with pytest.raises(concurrent.futures.TimeoutError):
        pending.result(0.3)  # left to the referee's clock
    second = connect(gateway, token)
    # The new instance may still answer the request its predecessor received.
    second.decide("r1", "play KS")
    assert pending.result(10) == "play KS"
    # and the match moves to it.
    nxt = ask(gateway, "alice", request("r2", "m1"))
    assert second.recv_kind("decision_request").decision_request.request_id == "r2"
    second.decide("r2", "play QS")
    assert nxt.result(10) == "play QS"
    second.close()


def test_requests_wait_for_a_bot_that_is_not_connected(gateway: GatewayThread) -> None:
    token = gateway.register("alice")
    answer = ask(gateway, "alice", request("r1"))
    bot = connect(gateway, token)
    assert bot.recv_kind("decision_request").decision_request.request_id == "r1"
    bot.decide("r1", "play QS")
    assert answer.result(10) == "play QS"
    bot.close()


def test_events_go_to_the_instance_holding_the_match_once(gateway: GatewayThread) -> None:
    token = gateway.register("alice")
    bot = connect(gateway, token)
    hub = gateway.gateway.hub
    seats = [RemoteSeat(hub, "alice"), RemoteSeat(hub, "alice")]  # one bot in two seats
    events = [
        {"type": "deal_start", "deal": 2, "dealer": 1},
        {"type": "action", "seat": 1, "action": "bid 100", "auto": True},
        {"type": "match_end", "status": "completed", "scores": [1, 2], "ranks": [2, 1]},
    ]

    async def play() -> None:
        for event in events:
            for seat in seats:
                await seat.on_event("m1", event)

    gateway.call(play())
    got = [bot.recv_kind("event").event for _ in events]
    assert [e.type for e in got] == ["deal_start", "action", "match_end"]
    assert [e.sequence for e in got] == [0, 1, 2]
    assert got[1].action.deal == 2 and got[1].action.automatic
    assert got[2].match_end.ranks == [2, 1]
    with pytest.raises(queue.Empty):  # nothing more arrives
        bot.recv_kind("event", timeout=0.3)
    bot.close()


def test_stream_errors_end_only_that_session(gateway: GatewayThread) -> None:
    token = gateway.register("alice")
    broken = connect(gateway, token)
    broken.send_bytes(b"\xff\xff\xff")  # not a PlayRequest
    with pytest.raises(grpc.RpcError) as info:
        broken.recv_kind("never", timeout=10)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    fine = connect(gateway, token)
    answer = ask(gateway, "alice", request("r1"))
    fine.decide(fine.recv_kind("decision_request").decision_request.request_id, "play QS")
    assert answer.result(10) == "play QS"
    broken.close()
    fine.close()
