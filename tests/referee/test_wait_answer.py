"""How the referee waits for a remote answer on the bot's clock (``wait_answer``).

The waiting task is woken only when the wait is over; these cases check that every way a
wait can end still ends it, with the right verdict, on a real event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

import pytest

from arena.referee import clock as clock_module
from arena.referee.clock import BotClock, Waited, wait_answer

Scenario = Callable[[asyncio.AbstractEventLoop, asyncio.Future[Any], BotClock], None]


def _run(
    scenario: Scenario,
    budget_s: float = 0.05,
    platform_limit_s: float = 5.0,
    stop: bool = False,
) -> tuple[Waited, asyncio.Future[Any], BotClock, float]:
    async def main() -> tuple[Waited, asyncio.Future[Any], BotClock, float]:
        loop = asyncio.get_running_loop()
        task: asyncio.Future[Any] = loop.create_future()
        clock = BotClock()
        stopper: asyncio.Future[Any] | None = loop.create_future() if stop else None
        if stopper is not None:
            loop.call_later(0.02, stopper.set_result, None)
        scenario(loop, task, clock)
        began = time.perf_counter()
        waited = await wait_answer(
            task, clock, budget_s, stop=stopper, platform_limit_s=platform_limit_s
        )
        return waited, task, clock, time.perf_counter() - began

    return asyncio.run(main())


def _answer_like_the_hub(task: asyncio.Future[Any], clock: BotClock) -> None:
    clock.stop()  # the hub stops the clock, then hands over the answer
    task.set_result("pass")


def test_an_answer_read_by_the_hub_ends_the_wait_answered() -> None:
    def scenario(loop: asyncio.AbstractEventLoop, task: asyncio.Future[Any], c: BotClock) -> None:
        loop.call_later(0.005, c.start)
        loop.call_later(0.01, _answer_like_the_hub, task, c)

    waited, task, _, took = _run(scenario, budget_s=5.0)
    assert waited == Waited(True)
    assert task.result() == "pass"
    assert took < 4.0


def test_an_answer_without_a_clock_stop_ends_the_wait() -> None:
    def scenario(loop: asyncio.AbstractEventLoop, task: asyncio.Future[Any], c: BotClock) -> None:
        loop.call_later(0.005, c.start)
        loop.call_later(0.01, task.set_result, "pass")  # the future alone, no clock stop

    assert _run(scenario, budget_s=5.0)[0] == Waited(True)


def test_a_clock_that_never_starts_is_the_platforms_fault() -> None:
    def scenario(loop: asyncio.AbstractEventLoop, task: asyncio.Future[Any], c: BotClock) -> None:
        pass

    waited, _, _, took = _run(scenario, budget_s=0.01, platform_limit_s=0.05)
    assert waited == Waited(False, platform_fault=True)
    assert took >= 0.04


def test_a_started_clock_with_no_answer_times_out_after_the_budget() -> None:
    def scenario(loop: asyncio.AbstractEventLoop, task: asyncio.Future[Any], c: BotClock) -> None:
        loop.call_later(0.03, c.start)  # the platform held the request for 30 ms first

    waited, _, clock, took = _run(scenario, budget_s=0.05)
    assert waited == Waited(False)
    # The budget ran from the start, not from the question: 30 ms + 50 ms at the least.
    assert took >= 0.075
    assert clock.bot_s() >= 0.05


def test_a_clock_already_running_counts_from_its_start() -> None:
    def scenario(loop: asyncio.AbstractEventLoop, task: asyncio.Future[Any], c: BotClock) -> None:
        c.start()

    waited, _, _, took = _run(scenario, budget_s=0.05)
    assert waited == Waited(False)
    assert 0.045 <= took < 2.0


def test_the_stop_signal_ends_the_wait() -> None:
    def scenario(loop: asyncio.AbstractEventLoop, task: asyncio.Future[Any], c: BotClock) -> None:
        c.start()

    waited, _, _, took = _run(scenario, budget_s=5.0, stop=True)
    assert waited == Waited(False, stopped=True)
    assert took < 4.0


def test_a_clock_stopped_before_its_answer_arrives_keeps_waiting_for_it() -> None:
    def scenario(loop: asyncio.AbstractEventLoop, task: asyncio.Future[Any], c: BotClock) -> None:
        loop.call_later(0.005, c.stop)  # stopped (and so started) with no answer yet
        loop.call_later(0.02, task.set_result, "pass")

    assert _run(scenario, budget_s=5.0)[0] == Waited(True)


def test_an_answer_already_in_returns_at_once() -> None:
    def scenario(loop: asyncio.AbstractEventLoop, task: asyncio.Future[Any], c: BotClock) -> None:
        task.set_result("pass")

    waited, task, _, _ = _run(scenario)
    assert waited == Waited(True)
    assert task.result() == "pass"


def test_a_seat_that_fails_or_withdraws_its_decision_ends_the_wait_answered() -> None:
    """The caller reads the task's own outcome: an error, or a cancel by the seat."""

    def failing(loop: asyncio.AbstractEventLoop, task: asyncio.Future[Any], c: BotClock) -> None:
        c.start()
        loop.call_later(0.01, task.set_exception, ConnectionError("gone"))

    def withdrawn(loop: asyncio.AbstractEventLoop, task: asyncio.Future[Any], c: BotClock) -> None:
        c.start()
        loop.call_later(0.01, task.cancel)

    waited, task, _, _ = _run(failing, budget_s=5.0)
    assert waited == Waited(True) and isinstance(task.exception(), ConnectionError)
    waited, task, _, _ = _run(withdrawn, budget_s=5.0)
    assert waited == Waited(True) and task.cancelled()


def test_a_request_that_ran_out_of_time_is_withdrawn() -> None:
    def scenario(loop: asyncio.AbstractEventLoop, task: asyncio.Future[Any], c: BotClock) -> None:
        c.start()

    waited, task, _, _ = _run(scenario, budget_s=0.02)
    assert waited == Waited(False)
    assert task.cancelled()


@pytest.mark.parametrize("cancel_after_s", [0.0, 0.01])
def test_a_cancelled_wait_withdraws_the_request_and_leaves_no_timer(cancel_after_s: float) -> None:
    async def main() -> tuple[asyncio.Future[Any], int, Any]:
        loop = asyncio.get_running_loop()
        task: asyncio.Future[Any] = loop.create_future()
        stop: asyncio.Future[Any] = loop.create_future()
        clock = BotClock()
        clock.start()
        waiting = asyncio.ensure_future(wait_answer(task, clock, 5.0, stop=stop))
        await asyncio.sleep(cancel_after_s)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        deadlines = clock_module._DEADLINES.get(loop)
        timers = 0 if deadlines is None else len(deadlines)
        stop.set_result(None)  # the finished wait no longer listens to the stop signal
        await asyncio.sleep(0)
        return task, timers, waiting

    task, timers, waiting = asyncio.run(main())
    assert task.cancelled()
    assert timers == 0
    assert waiting.cancelled()


def test_a_task_slow_to_finish_does_not_hold_up_a_wait_that_timed_out() -> None:
    """A seat that asks through a task (Redis routing) may take its time to wind down; the
    referee's verdict does not wait for it (the caller cancels the task and moves on)."""

    async def main() -> tuple[Waited, float, bool]:
        release = asyncio.Event()

        async def stubborn() -> str:
            while not release.is_set():
                with contextlib.suppress(asyncio.CancelledError):  # deaf to a cancel
                    await release.wait()
            return "pass"

        task = asyncio.ensure_future(stubborn())
        clock = BotClock()
        clock.start()
        began = time.perf_counter()
        waiting = asyncio.ensure_future(wait_answer(task, clock, 0.02))
        await asyncio.wait({waiting}, timeout=5.0)
        took = time.perf_counter() - began
        still_running = not task.done()
        release.set()  # lets both end, whatever happened
        await task
        return await waiting, took, still_running

    waited, took, still_running = asyncio.run(main())
    assert waited == Waited(False)
    assert took < 2.0
    assert still_running  # the wait neither waited for the task nor cancelled it
