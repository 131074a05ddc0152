"""Decision routing over a real Redis: worker-side seat, gateway-side pump."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest
import redis
from tournament_support import redis_server

from arena.match.types import JSON, DecisionRequest
from arena.tournament.routing import (
    RedisRemoteSeat,
    RemoteBotError,
    RemoteTimeout,
    pump_redis_requests,
    requests_key,
    routing_resolver,
)


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with redis_server() as url:
        yield url


class LastLegalSeat:
    """A gateway-side seat standing in for a connected bot: answers the last legal action."""

    def __init__(self, delay: float = 0.0, fail: bool = False) -> None:
        self.name = "bot"
        self.delay = delay
        self.fail = fail
        self.events: list[tuple[str, JSON]] = []
        self.requests: list[DecisionRequest] = []
        self.in_flight = 0
        self.most_in_flight = 0

    async def decide(self, request: DecisionRequest) -> str:
        self.requests.append(request)
        if self.fail:
            raise ConnectionError("bot instance went away")
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay)
        finally:
            self.in_flight -= 1
        return request.legal[-1]

    async def on_event(self, match_id: str, event: JSON) -> None:
        self.events.append((match_id, event))


def request(n: int, deadline_ms: int = 2000, bank_ms: int = 0) -> DecisionRequest:
    return DecisionRequest(
        match_id="m1",
        request_id=f"r{n}",
        seat=1,
        observation={"seat": 1, "hand": ["AS", "TS"]},
        legal=("pass", f"bid {100 + 5 * n}"),
        deadline_ms=deadline_ms,
        time_bank_ms=bank_ms,
    )


def test_requests_and_events_reach_the_gateway_seat(redis_url: str) -> None:
    async def scenario() -> tuple[list[str], LastLegalSeat]:
        gateway_seat = LastLegalSeat(delay=0.05)
        stop = asyncio.Event()
        pump = asyncio.create_task(
            pump_redis_requests(redis_url, "alpha", gateway_seat, stop=stop, poll_s=0.2)
        )
        seat = routing_resolver(redis_url)("remote:alpha")
        assert isinstance(seat, RedisRemoteSeat) and seat.name == "alpha"
        await seat.on_event("m1", {"type": "deal_start", "deal": 0})
        answers = await asyncio.gather(*(seat.decide(request(n)) for n in range(5)))
        await seat.on_event("m1", {"type": "match_end"})
        stop.set()
        await pump
        return list(answers), gateway_seat

    answers, gateway_seat = asyncio.run(scenario())
    assert answers == [f"bid {100 + 5 * n}" for n in range(5)]
    assert gateway_seat.events == [
        ("m1", {"type": "deal_start", "deal": 0}),
        ("m1", {"type": "match_end"}),
    ]
    got = gateway_seat.requests[0]
    assert got.observation == {"seat": 1, "hand": ["AS", "TS"]}
    assert got.deadline_ms == 2000 and got.seat == 1 and got.match_id == "m1"


def test_answers_come_back_concurrently(redis_url: str) -> None:
    """The pump does not wait for one answer before taking the next request: a slow match
    never holds up the others."""
    gateway_seat = LastLegalSeat(delay=0.3)

    async def scenario() -> list[str]:
        stop = asyncio.Event()
        pump = asyncio.create_task(
            pump_redis_requests(redis_url, "slow", gateway_seat, stop=stop, poll_s=0.2)
        )
        seats = [RedisRemoteSeat(redis_url, "slow") for _ in range(6)]
        answers = await asyncio.gather(*(s.decide(request(n)) for n, s in enumerate(seats)))
        for s in seats:
            await s.aclose()
        stop.set()
        await pump
        return list(answers)

    assert asyncio.run(scenario()) == [f"bid {100 + 5 * n}" for n in range(6)]
    assert gateway_seat.most_in_flight > 1


def test_no_gateway_means_timeout_and_stale_requests_are_dropped(redis_url: str) -> None:
    async def scenario() -> LastLegalSeat:
        seat = RedisRemoteSeat(redis_url, "offline")
        with pytest.raises(RemoteTimeout):
            await seat.decide(request(0, deadline_ms=200))
        await seat.aclose()
        # The request is still in the list; once its time is over a gateway must not act on it.
        await asyncio.sleep(2.5)
        late = LastLegalSeat()
        stop = asyncio.Event()
        pump = asyncio.create_task(
            pump_redis_requests(redis_url, "offline", late, stop=stop, poll_s=0.2)
        )
        await asyncio.sleep(0.6)
        stop.set()
        await pump
        return late

    late = asyncio.run(scenario())
    assert late.requests == []
    assert redis.Redis.from_url(redis_url).llen(requests_key("offline")) == 0


def test_gateway_error_is_reported_to_the_worker(redis_url: str) -> None:
    async def scenario() -> None:
        stop = asyncio.Event()
        pump = asyncio.create_task(
            pump_redis_requests(redis_url, "flaky", LastLegalSeat(fail=True), stop=stop, poll_s=0.2)
        )
        seat = RedisRemoteSeat(redis_url, "flaky")
        try:
            with pytest.raises(RemoteBotError, match="bot instance went away"):
                await seat.decide(request(0))
        finally:
            await seat.aclose()
            stop.set()
            await pump

    asyncio.run(scenario())


def test_malformed_messages_are_skipped(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    client.rpush(requests_key("robust"), b"not json", json.dumps({"no": "kind"}))

    async def scenario() -> str:
        stop = asyncio.Event()
        pump = asyncio.create_task(
            pump_redis_requests(redis_url, "robust", LastLegalSeat(), stop=stop, poll_s=0.2)
        )
        seat = RedisRemoteSeat(redis_url, "robust")
        answer = await seat.decide(request(1))
        await seat.aclose()
        stop.set()
        await pump
        return answer

    assert asyncio.run(scenario()) == "bid 105"
