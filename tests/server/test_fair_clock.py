"""Fair clocks and admission control, against a real gateway and real bot streams.

A bot is charged only for the time the platform spent waiting on it: a gateway whose event
loop is stalled (here on purpose, by blocking it from another thread) must not turn honest,
instant answers into timeouts, while a bot that really is slow is still timed out. A gateway
told to play at most N matches at once holds the others back before their first deal.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

from thousand_bot import Bot, BotClient
from thousand_bot.examples import FirstLegal
from thousand_bot.proto.thousand.v1 import bot_pb2

from arena.match.types import MatchResult
from arena.rigs.testing import GatewayThread, RawBot
from arena.server.admission import Admission


def _first_legal(request: bot_pb2.DecisionRequest) -> str:
    legal = list(request.legal_actions)
    return next((a for a in legal if a != "concede"), legal[0])


def _play(gw: GatewayThread, bots: list[str], tc: tuple[int, int, int], **kw: Any) -> str:
    """A match with a secret seed: the clock is what these tests look at, not the deals."""
    return gw.call(
        gw.gateway.matches.start(
            preset="classic", options={}, seed="", bots=bots, time_control=tc, **kw
        )
    )


async def _stop(gw: GatewayThread, match_id: str) -> None:
    gw.gateway.matches.stop(match_id)


def _result(gw: GatewayThread, match_id: str, timeout: float = 120) -> MatchResult:
    result = gw.call(gw.gateway.matches.wait(match_id), timeout=timeout)
    assert result is not None
    return result


class _Staller:
    """Blocks the gateway's event loop for ``block_s``, then lets it run for ``every_s``,
    again and again: a platform that is busy elsewhere (a garbage collection, a burst of
    other matches)."""

    def __init__(self, gw: GatewayThread, block_s: float, every_s: float) -> None:
        self.gw = gw
        self.block_s = block_s
        self.every_s = every_s
        self.stalls = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _block(self, done: threading.Event) -> None:
        self.stalls += 1
        time.sleep(self.block_s)  # the whole loop stands still
        done.set()

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            done = threading.Event()
            self.gw.loop.call_soon_threadsafe(self._block, done)
            done.wait(10)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)


def test_a_stalled_gateway_does_not_charge_honest_bots(gateway: GatewayThread) -> None:
    bots = [RawBot(gateway.address, gateway.register(n), answer=_first_legal) for n in "abc"]
    try:
        for bot in bots:
            bot.recv_kind("welcome")
        staller = _Staller(gateway, block_s=0.15, every_s=0.2)
        try:
            # 50 ms a decision and no bank: each stall is three times the whole clock.
            match_id = _play(gateway, ["a", "b", "c"], (50, 0, 1000), max_deals=10_000)
            limit = time.monotonic() + 60
            while staller.stalls < 8 and time.monotonic() < limit:
                time.sleep(0.05)
            gateway.call(_stop(gateway, match_id))
            result = _result(gateway, match_id)
        finally:
            staller.close()
    finally:
        for bot in bots:
            bot.close()
    assert staller.stalls >= 8
    assert result.status == "aborted" and result.deals > 3
    assert [s.timeouts for s in result.seat_stats] == [0, 0, 0]
    assert [s.strikes for s in result.seat_stats] == [0, 0, 0]
    # The stalls were seen and recorded as the platform's, not the bots'.
    assert max(s.platform_ms_max for s in result.seat_stats) >= 100
    assert all(s.think_ms_max < 50 for s in result.seat_stats)


class _Sleepy(Bot):
    """Answers every decision after ``delay_s``: truly slow, whatever the platform does."""

    def __init__(self, delay_s: float) -> None:
        super().__init__()
        self.delay_s = delay_s

    async def decide(self, observation: Any, legal: list[str]) -> str:  # type: ignore[override]
        await asyncio.sleep(self.delay_s)
        return next((a for a in legal if a != "concede"), legal[0])


def test_a_slow_bot_is_still_timed_out(
    gateway: GatewayThread, connect_bots: Callable[..., dict[str, BotClient]]
) -> None:
    connect_bots(FirstLegal, "quick", "quicker")
    connect_bots(lambda: _Sleepy(0.12), "sleepy")
    match_id = _play(gateway, ["quick", "sleepy", "quicker"], (50, 100, 3), max_deals=5)
    result = _result(gateway, match_id)
    assert result.status == "forfeit" and result.forfeit_seat == 1
    sleepy = result.seat_stats[1]
    assert sleepy.timeouts == 3 and sleepy.strikes == 3
    # The first decisions drew the bank (120 ms taken against a 50 ms clock).
    assert sleepy.think_ms_max >= 100
    assert result.seat_stats[0].timeouts == result.seat_stats[2].timeouts == 0


def test_a_bot_that_is_not_connected_is_charged(gateway: GatewayThread) -> None:
    bots = [RawBot(gateway.address, gateway.register(n), answer=_first_legal) for n in "ab"]
    gateway.register("absent")
    try:
        for bot in bots:
            bot.recv_kind("welcome")
        match_id = _play(gateway, ["a", "absent", "b"], (50, 0, 2), max_deals=3)
        result = _result(gateway, match_id)
    finally:
        for bot in bots:
            bot.close()
    assert result.status == "forfeit" and result.forfeit_seat == 1
    assert result.seat_stats[1].timeouts == 2
    assert result.seat_stats[1].platform_faults == 0


def test_matches_over_the_limit_wait_before_their_first_deal(tmp_path: Any) -> None:
    gw = GatewayThread(str(tmp_path / "gw.sqlite3"), max_matches=2)
    bots: list[RawBot] = []
    try:
        bots = [RawBot(gw.address, gw.register(n), answer=_first_legal) for n in "abc"]
        for bot in bots:
            bot.recv_kind("welcome")
        admission: Admission = gw.gateway.matches.admission
        ids = [
            _play(gw, ["a", "b", "c"], (1000, 10000, 3), max_deals=4)
            for i in range(5)
        ]
        most_running = most_waiting = 0
        while gw.gateway.matches.running():
            most_running = max(most_running, admission.running)
            most_waiting = max(most_waiting, admission.waiting)
            time.sleep(0.002)
        results = [_result(gw, i) for i in ids]
    finally:
        for bot in bots:
            bot.close()
        gw.close()
    assert most_running == 2
    assert most_waiting >= 2
    assert [r.status for r in results] == ["completed"] * 5
    assert all(r.deals == 4 for r in results)


def test_admission_limit_follows_the_loop_lag() -> None:
    """The controller's rule, step by step: grow while matches wait and the loop keeps up,
    shrink towards what ran when it falls behind, never below the floor or over the bound."""
    adm = Admission(max_matches=40, min_limit=4, start_limit=8)
    quiet, busy = [0.0001] * 50, [0.02] * 50

    async def fill(running: int, waiting: int) -> None:
        adm.running = running
        loop = asyncio.get_running_loop()
        adm._waiters.clear()
        adm._waiters.extend(loop.create_future() for _ in range(waiting))

    async def steps() -> list[int]:
        seen = []
        for lags, running, waiting in [
            (quiet, 8, 10),   # keeping up, matches waiting: grow fast (a quarter)
            (quiet, 10, 10),
            (quiet, 12, 0),   # nobody waiting: stay
            (busy, 12, 10),   # falling behind: back to 80% of what ran
            ([0.0015] * 50, 9, 10),  # close to the target: grow by one
            (busy, 3, 10),    # never below the floor
        ]:
            await fill(running, waiting)
            adm.adjust(lags)
            seen.append(adm.limit)
        adm._waiters.clear()
        return seen

    assert asyncio.run(steps()) == [10, 12, 12, 9, 10, 10]
    # Slow decisions raise the alarm even when the loop itself looks quiet.
    async def delayed() -> int:
        await fill(10, 5)
        adm.limit = 10
        adm.adjust(quiet, [0.02] * 20)
        adm._waiters.clear()
        return adm.limit

    assert asyncio.run(delayed()) == 8
