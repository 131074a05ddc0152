"""A remote bot may rightly answer after more than redis-py's default 5 s socket timeout."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import redis

from arena.match.types import DecisionRequest
from arena.tournament.routing import RedisRemoteSeat, requests_key


def test_an_answer_after_six_seconds_is_received(redis_url: str) -> None:
    seat = RedisRemoteSeat(redis_url, "slowpoke", forward_events=False)
    request = DecisionRequest(
        match_id="m", request_id="r1", seat=0, observation={}, legal=("pass", "bid 105"),
        deadline_ms=1000, time_bank_ms=8000,
    )

    def slow_gateway() -> None:
        r = redis.Redis.from_url(redis_url)
        item = r.blpop([requests_key("slowpoke")], timeout=10)
        assert item is not None
        message = json.loads(item[1])
        time.sleep(6.0)  # within deadline + bank (9 s), beyond a 5 s socket read timeout
        r.rpush(message["reply_to"], json.dumps({"action": "bid 105"}))

    t = threading.Thread(target=slow_gateway)
    t.start()
    try:
        assert asyncio.run(seat.decide(request)) == "bid 105"
    finally:
        t.join(timeout=15)
        asyncio.run(seat.aclose())
