"""The clocks' shared timers: run in time order, never early, never after a cancel."""

from __future__ import annotations

import asyncio
import functools

from arena.referee.clock import Deadlines


def test_timers_run_in_time_order_whatever_order_they_were_armed_in() -> None:
    async def main() -> list[tuple[str, bool]]:
        loop = asyncio.get_running_loop()
        deadlines = Deadlines(loop)
        ran: list[tuple[str, bool]] = []
        start = loop.time()

        def note(name: str, due: float) -> None:
            ran.append((name, loop.time() >= due - 1e-3))  # never (noticeably) early

        for name, delay in [("late", 0.06), ("early", 0.01), ("middle", 0.03)]:
            due = start + delay
            deadlines.call_at(due, functools.partial(note, name, due))
        await asyncio.sleep(0.1)
        assert len(deadlines) == 0
        return ran

    assert asyncio.run(main()) == [("early", True), ("middle", True), ("late", True)]


def test_a_cancelled_timer_never_runs_and_the_others_still_do() -> None:
    async def main() -> list[int]:
        loop = asyncio.get_running_loop()
        deadlines = Deadlines(loop)
        ran: list[int] = []
        now = loop.time()
        entries = [
            deadlines.call_at(now + 0.01 * (i + 1), functools.partial(ran.append, i))
            for i in range(4)
        ]
        deadlines.cancel(entries[0])  # the earliest: the loop's own timer must move on
        deadlines.cancel(entries[2])
        deadlines.cancel(entries[2])  # twice is harmless
        assert len(deadlines) == 2
        await asyncio.sleep(0.08)
        return ran

    assert asyncio.run(main()) == [1, 3]


def test_a_timer_armed_by_a_timer_waits_for_its_own_time() -> None:
    """A callback that arms another timer (a clock looking again after its grace) does not
    run it in the same turn, even when it is already due."""

    async def main() -> list[str]:
        loop = asyncio.get_running_loop()
        deadlines = Deadlines(loop)
        ran: list[str] = []

        def first() -> None:
            ran.append("first")
            deadlines.call_at(loop.time(), lambda: ran.append("second"))
            ran.append("armed")

        deadlines.call_at(loop.time() + 0.005, first)
        await asyncio.sleep(0.05)
        return ran

    assert asyncio.run(main()) == ["first", "armed", "second"]


def test_many_cancelled_timers_are_swept_away() -> None:
    async def main() -> tuple[int, int]:
        loop = asyncio.get_running_loop()
        deadlines = Deadlines(loop)
        far = loop.time() + 3600
        entries = [deadlines.call_at(far + i, lambda: None) for i in range(5000)]
        for entry in entries[:4000]:
            deadlines.cancel(entry)
        kept = len(deadlines._heap)
        for entry in entries[4000:]:
            deadlines.cancel(entry)
        return kept, len(deadlines)

    kept, live = asyncio.run(main())
    assert kept < 5000  # swept once the cancelled ones were most of the heap
    assert live == 0


def test_a_failing_timer_is_reported_and_the_others_still_run() -> None:
    """A timer that raises must not take the timers due with it down: a lost timer would
    leave a decision waiting with no clock to end it."""

    async def main() -> tuple[list[str], list[str]]:
        loop = asyncio.get_running_loop()
        reported: list[str] = []
        loop.set_exception_handler(lambda _loop, ctx: reported.append(ctx["message"]))
        deadlines = Deadlines(loop)
        ran: list[str] = []

        def boom() -> None:
            raise RuntimeError("boom")

        now = loop.time() + 0.005
        deadlines.call_at(now, boom)
        deadlines.call_at(now, functools.partial(ran.append, "same time"))
        deadlines.call_at(now + 0.01, functools.partial(ran.append, "later"))
        await asyncio.sleep(0.05)
        return ran, reported

    ran, reported = asyncio.run(main())
    assert ran == ["same time", "later"]
    assert reported == ["a clock's timer failed"]
