"""Routed decisions when a bot changes streams or gateways mid-match.

Real parts: a private Redis, a gateway routing through it (on a thread), bots speaking the
protocol by hand (so every byte they get is seen), and the worker's side of a match
(:class:`RedisRemoteSeat`) on an event loop of its own.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import redis
from thousand_bot.proto.thousand.v1 import bot_pb2

from arena.match.types import DecisionRequest
from arena.referee.clock import BotClock, PlatformError
from arena.rigs.processes import redis_server, wait_until
from arena.rigs.testing import GatewayThread, RawBot
from arena.tournament.routing import (
    RedisRemoteSeat,
    RemoteTimeout,
    requests_key,
    served_key,
)

T = TypeVar("T")


class Worker:
    """The worker's side of one match: a seat for bot ``x`` on a loop of its own."""

    def __init__(self, url: str, bot: str = "x") -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.seat = RedisRemoteSeat(url, bot)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def events(self, match_id: str, kinds: list[str]) -> None:
        async def send() -> None:
            for kind in kinds:
                self.seat.on_event_nowait(match_id, {"type": kind, "match_id": match_id})

        self.run(send())

    def ask(self, request_id: str, budget_ms: int = 5000,
            clock: BotClock | None = None) -> str:
        request = DecisionRequest(
            match_id="m1", request_id=request_id, seat=0,
            observation={"seat": 0, "phase": "auction", "hand": ["AS", "TS"]},
            legal=("pass", "bid 110"), deadline_ms=budget_ms, time_bank_ms=0,
        )
        return self.run(self.seat.decide_clocked(request, clock or BotClock()), 60)

    def close(self) -> None:
        self.run(self.seat.aclose())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture
def redis_url() -> Iterator[str]:
    with redis_server() as server:
        yield server.url


@pytest.fixture
def gateway(tmp_path: Path, redis_url: str) -> Iterator[GatewayThread]:
    gw = GatewayThread(str(tmp_path / "registry.sqlite3"), routing_url=redis_url)
    try:
        yield gw
    finally:
        gw.close()


def connected(gw: GatewayThread, bot: str, n: int = 1) -> None:
    routing = gw.gateway.routing
    assert routing is not None
    wait_until(lambda: gw.gateway.hub.instances(bot) == n
               and (n == 0 or bot in routing.pumping()),
               timeout=20, what=f"{n} instances of {bot}")


def events_then_request(bot: RawBot) -> tuple[list[int], bot_pb2.DecisionRequest]:
    """The event numbers a bot reads before its next decision request, and the request."""
    seen: list[int] = []
    while True:
        message = bot.recv(20)
        kind = message.WhichOneof("message")
        if kind == "event":
            seen.append(message.event.sequence)
        elif kind == "decision_request":
            return seen, message.decision_request


def first(request: bot_pb2.DecisionRequest) -> str:
    return str(request.legal_actions[0])


def test_a_new_stream_is_told_the_events_it_missed_before_the_question(
    gateway: GatewayThread, redis_url: str
) -> None:
    """The bot's stream breaks mid-match and it connects again: the events sent meanwhile
    would leave a gap; instead they come, in order and from the first one the bot has not
    confirmed by an answer, right before its next question."""
    token = gateway.register("x")
    worker = Worker(redis_url)
    one = RawBot(gateway.address, token)
    two: RawBot | None = None
    try:
        connected(gateway, "x")
        worker.events("m1", ["match_start", "deal_start", "action"])
        assert [one.recv_kind("event").event.sequence for _ in range(3)] == [0, 1, 2]
        one.close()
        connected(gateway, "x", 0)
        worker.events("m1", ["action", "action"])
        two = RawBot(gateway.address, token)
        connected(gateway, "x")
        # A gateway does not send an event after a gap on its own: the question brings them.
        wait_until(lambda: redis.Redis.from_url(redis_url).llen(requests_key("x")) == 0,
                   timeout=20, what="the pump to take the events")
        answer: dict[str, str] = {}
        asking = threading.Thread(target=lambda: answer.setdefault("a", worker.ask("m1/1")))
        asking.start()
        seen, request = events_then_request(two)
        assert seen == [0, 1, 2, 3, 4]
        two.decide(request.request_id, first(request))
        asking.join(30)
        assert answer == {"a": "pass"}
        # Answered: from now on the events go out one by one, in order, on this stream.
        worker.events("m1", ["action"])
        assert two.recv_kind("event").event.sequence == 5
    finally:
        for bot in (one, two):
            if bot is not None:
                bot.close()
        worker.close()


def test_a_question_whose_stream_ends_is_asked_again_with_the_time_already_used(
    gateway: GatewayThread, redis_url: str
) -> None:
    """The stream carrying a question ends before the answer: the gateway hands the
    question back and the match asks it again wherever the bot connects next. The time
    the bot held it, and the time it took to come back, stay charged."""
    token = gateway.register("x")
    worker = Worker(redis_url)
    one = RawBot(gateway.address, token)
    two: RawBot | None = None
    try:
        connected(gateway, "x")
        clock = BotClock()
        answer: dict[str, str] = {}
        asking = threading.Thread(
            target=lambda: answer.setdefault("a", worker.ask("m1/1", 10_000, clock)))
        asking.start()
        request = one.recv_kind("decision_request").decision_request
        held = time.perf_counter()
        time.sleep(0.4)
        one.close()
        two = RawBot(gateway.address, token)
        again = two.recv_kind("decision_request", timeout=20).decision_request
        assert again.request_id == request.request_id
        assert again.deadline_ms < request.deadline_ms  # what is left of the bot's time
        came_back = time.perf_counter()
        two.decide(again.request_id, "bid 110")
        asking.join(30)
        assert answer == {"a": "bid 110"}
        # Charged: the 0.4 s it held the question (less any stall of the gateway's loop,
        # which is given back) and the way back, not a fresh clock.
        assert clock.reported_bot_s is not None
        assert 0.3 <= clock.reported_bot_s <= came_back - held + 1.0
    finally:
        for bot in (one, two):
            if bot is not None:
                bot.close()
        worker.close()


def test_a_bot_served_lately_by_a_lost_gateway_is_asked_again_not_timed_out(
    gateway: GatewayThread, redis_url: str
) -> None:
    """A serving gateway marks the bot as served, for a while beyond its lease: a match
    whose bot's gateway was lost or cut off (the bot has not reconnected elsewhere yet)
    treats the silence as the platform's fault and asks again. A bot that left is gone:
    its gateway removes the mark, and silence is the bot's timeout."""
    client = redis.Redis.from_url(redis_url)
    worker = Worker(redis_url)
    bot = RawBot(gateway.address, gateway.register("x"))
    try:
        connected(gateway, "x")
        routing = gateway.gateway.routing
        assert routing is not None
        wait_until(lambda: client.get(served_key("x")) == routing.gateway_id.encode(),
                   timeout=10, what="the served mark")
        bot.close()
        connected(gateway, "x", 0)
        wait_until(lambda: client.get(served_key("x")) is None, timeout=10,
                   what="the mark to go with the bot")
        with pytest.raises(RemoteTimeout):
            worker.ask("m1/1", 200)
        client.set(served_key("x"), "gw-that-was-cut-off", px=60_000)
        with pytest.raises(PlatformError, match="gw-that-was-cut-off"):
            worker.ask("m1/2", 200)
    finally:
        bot.close()
        worker.close()
        client.close()
