"""Fair clocks: a bot is charged only for the time the platform spent waiting on it.

A remote decision crosses several queues before the bot sees it (the referee's event
loop, the gateway's outgoing queue for that bot's stream, Redis when the match runs on a
worker) and several more on the way back. Under load those queues grow, and a clock
started when the referee *asked* would charge the bot for the platform's own slowness:
a loaded gateway would turn honest bots' answers into timeouts, strikes and forfeits.

So the transport that reaches the bot tells the referee when the bot's time starts and
stops through a :class:`BotClock`:

* ``start()`` when the request is handed to the bot's stream (or when the bot turns out to
  have no instance connected to take it: waiting for an absent bot is the bot's time);
* ``stop()`` when its answer is read from the stream;
* or ``report()`` when the clock was kept further away (a gateway reached through Redis
  measures the bot there and sends the figure back with the answer).

:func:`wait_answer` is the referee's side: it waits without charging anybody until the
clock starts (bounded by a platform limit), then for the bot's budget from that moment.
Everything before ``start()`` and after ``stop()`` is platform delay, recorded apart
(``SeatStats.platform_ms_*``, the ``arena_platform_delay_seconds`` histogram).

One more delay hides *between* start and stop: while the event loop is busy with other
work (other matches, a garbage collection, a burst of messages), an answer that has
arrived is not read, and a timer that is due does not fire. :class:`LoopStalls` watches
the loop with a light periodic callback and keeps the intervals in which it ran late;
the clock does not charge the bot for the part of its window that the loop spent
stalled. A bot cannot cause a stall (its messages are bounded and handled in constant
time), so this only ever gives back time the platform took.
"""

from __future__ import annotations

import asyncio
import collections
import heapq
import itertools
import math
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from arena.referee.errors import PlatformError as PlatformError

#: Longest time a request may wait inside the platform before the bot's clock starts. It
#: only bounds a platform that is stuck; a healthy gateway starts the clock in well under
#: a millisecond, and a saturated one holds new matches back instead (admission control).
PLATFORM_LIMIT_S = 30.0

#: When the bot's time is up, the referee still takes an answer that is already on its
#: way through the event loop: it waits this much longer (or as long as the loop was
#: behind when the timer fired, whichever is larger, up to ``READ_GRACE_MAX_S``) and judges
#: the answer by the time it was read, not by when the referee got round to it.
READ_GRACE_S = 0.002
READ_GRACE_MAX_S = 0.25


#: How often the loop is checked, and the lateness below which it counts as running.
STALL_PERIOD_S = 0.005
STALL_MIN_S = 0.0005


class LoopStalls:
    """When one event loop ran late: the intervals between a check's due time and the
    moment the loop got round to it, for the last few seconds."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        #: The loop watched (the one its clocks' requests are made on).
        self.loop = loop
        self.intervals: collections.deque[tuple[float, float]] = collections.deque(maxlen=4096)
        #: Lateness of every check since :meth:`take_lags` was last called.
        self._lags: list[float] = []
        self._due = time.perf_counter() + STALL_PERIOD_S
        self._handle = loop.call_later(STALL_PERIOD_S, self._tick)
        #: The budget timers of the clocks of this loop.
        self.deadlines = Deadlines(loop)

    @classmethod
    def current(cls) -> LoopStalls:
        """The watcher of the running loop (started on first use)."""
        loop = asyncio.get_running_loop()
        stalls = _WATCHERS.get(loop)
        if stalls is None:
            stalls = _WATCHERS[loop] = cls(loop)
        return stalls

    def _tick(self) -> None:
        now = time.perf_counter()
        late = now - self._due
        if late > STALL_MIN_S:
            self.intervals.append((self._due, now))
        if len(self._lags) < 100_000:
            self._lags.append(max(0.0, late))
        self._due = now + STALL_PERIOD_S
        if not self.loop.is_closed():
            self._handle = self.loop.call_later(STALL_PERIOD_S, self._tick)

    def take_lags(self) -> list[float]:
        """The lateness of each check since the last call (for admission control)."""
        lags, self._lags = self._lags, []
        return lags

    def overlap(self, start: float, end: float) -> float:
        """Seconds of ``[start, end]`` during which the loop was stalled."""
        total = 0.0
        for a, b in reversed(self.intervals):
            if b <= start:
                break
            lo, hi = max(a, start), min(b, end)
            if hi > lo:
                total += hi - lo
        # A stall still going on (the loop is running us late right now).
        if end > self._due:
            total += end - max(self._due, start)
        return total


_WATCHERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopStalls] = (
    weakref.WeakKeyDictionary()
)

#: A timer of :class:`Deadlines`: ``[when, number, callback]``; the callback is None once
#: it ran or was cancelled.
Deadline = list[Any]


class Deadlines:
    """Timers for many clocks on one event loop, behind one asyncio timer.

    Every remote decision arms a timer for its budget and nearly always cancels it (the
    answer comes first). An asyncio timer is a Python object in a heap ordered by a
    Python method, made and cancelled 2,500 times a second on a busy gateway; here a
    timer is a small list in a heap ordered by the C comparison of its first two items,
    and one asyncio timer is kept for the earliest of them. Budgets of one time control
    end in the order they began, so that timer rarely has to move. A cancelled timer is
    only marked, and dropped when its time comes (or in a sweep, once they are half of
    the heap).
    """

    __slots__ = ("_dead", "_handle", "_heap", "_numbers", "_when", "loop", "now")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        #: The loop's time, read without a call into the loop where that is the plain
        #: monotonic clock: asyncio's ``time()`` is a Python method around it, and a
        #: clock reads it twice a decision.
        self.now: Callable[[], float] = loop_clock(loop)
        self._heap: list[Deadline] = []
        self._numbers = itertools.count()
        self._handle: asyncio.TimerHandle | None = None
        self._when = math.inf
        self._dead = 0

    def __len__(self) -> int:
        """Timers still to run."""
        return len(self._heap) - self._dead

    def call_at(self, when: float, callback: Callable[[], None]) -> Deadline:
        """Run ``callback`` at ``when`` (the loop's time), unless cancelled before."""
        entry = [when, next(self._numbers), callback]
        heapq.heappush(self._heap, entry)
        if when < self._when:
            self._arm(when)
        return entry

    def cancel(self, entry: Deadline) -> None:
        if entry[2] is None:
            return
        entry[2] = None
        self._dead += 1
        if self._dead > 1024 and self._dead * 2 > len(self._heap):
            self._heap = [e for e in self._heap if e[2] is not None]
            heapq.heapify(self._heap)
            self._dead = 0

    def _arm(self, when: float) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._when = when
        self._handle = self.loop.call_at(when, self._fire)

    def _fire(self) -> None:
        self._handle = None
        self._when = math.inf
        heap = self._heap
        # What is due now runs now; what the callbacks arm waits for the next turn.
        end = self.now() + _CLOCK_RESOLUTION
        due = []
        while heap and heap[0][0] <= end:
            due.append(heapq.heappop(heap))
        for entry in due:
            callback = entry[2]
            if callback is None:
                self._dead -= 1
                continue
            entry[2] = None
            try:
                callback()
            except Exception as exc:  # as asyncio does for a timer: report, run the others
                self.loop.call_exception_handler(
                    {"message": "a clock's timer failed", "exception": exc}
                )
        while heap and heap[0][2] is None:
            heapq.heappop(heap)
            self._dead -= 1
        if heap and heap[0][0] < self._when:
            self._arm(heap[0][0])


_CLOCK_RESOLUTION = time.get_clock_info("monotonic").resolution


def loop_clock(loop: asyncio.AbstractEventLoop) -> Callable[[], float]:
    """What tells ``loop``'s time: ``time.monotonic`` itself for an asyncio loop that
    keeps the base class's clock (what ``BaseEventLoop.time`` returns), else the loop's
    own ``time`` (a loop with another clock, such as a test's)."""
    if getattr(type(loop), "time", None) is asyncio.BaseEventLoop.time:
        return time.monotonic
    return loop.time


def new_future(loop: asyncio.AbstractEventLoop) -> asyncio.Future[Any]:
    """``loop.create_future()``, without the Python method in between for an asyncio
    loop that keeps the base class's (a referee makes two futures a decision)."""
    if type(loop).create_future is asyncio.BaseEventLoop.create_future:
        return asyncio.Future(loop=loop)
    return loop.create_future()


_DEADLINES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Deadlines] = (
    weakref.WeakKeyDictionary()
)


def _deadlines(loop: asyncio.AbstractEventLoop, clock: BotClock) -> Deadlines:
    """The timers of ``loop``: its stall watcher's when the clock has it (the usual case,
    no look-up), else the loop's own."""
    stalls = clock.stalls
    if stalls is not None and stalls.loop is loop:
        return stalls.deadlines
    found = _DEADLINES.get(loop)
    if found is None:
        found = _DEADLINES[loop] = Deadlines(loop)
    return found


class BotClock:
    """When one decision's bot time started and stopped (``time.perf_counter`` seconds)."""

    __slots__ = ("_stalled", "_started", "created", "reported_bot_s", "reported_platform_s",
                 "stalls", "started", "stopped")

    def __init__(self, stalls: LoopStalls | None = None) -> None:
        self.stalls = stalls
        self.created = time.perf_counter()
        self.started: float | None = None
        self.stopped: float | None = None
        self.reported_bot_s: float | None = None
        self.reported_platform_s = 0.0
        self._started: asyncio.Future[None] | None = None
        #: The stalls of the finished window, worked out once: the hub, the referee and
        #: the metrics all ask after the stop, and the answer no longer changes then.
        self._stalled: float | None = None

    def start(self, at: float | None = None) -> None:
        """The bot can see the request from now on (idempotent: the first call counts)."""
        if self.started is not None:
            return
        self.started = time.perf_counter() if at is None else at
        fut = self._started
        if fut is not None and not fut.done():
            fut.set_result(None)

    def stop(self, at: float | None = None) -> None:
        """The bot's answer was read (the first call counts)."""
        if self.stopped is None:
            self.stopped = time.perf_counter() if at is None else at
            if self.started is None:
                self.start(self.stopped)

    def report(self, bot_s: float, platform_s: float = 0.0) -> None:
        """The bot's time as measured by a remote transport, and the delay it added."""
        self.reported_bot_s = max(0.0, bot_s)
        self.reported_platform_s = max(0.0, platform_s)
        self.start()

    def started_future(self) -> asyncio.Future[None]:
        if self._started is None:
            self._started = asyncio.get_running_loop().create_future()
            if self.started is not None:
                self._started.set_result(None)
        return self._started

    def bot_s(self, now: float | None = None) -> float:
        """Seconds charged to the bot so far (up to ``now`` while it is still thinking)."""
        if self.reported_bot_s is not None:
            return self.reported_bot_s
        if self.started is None:
            return 0.0
        if self.stopped is not None:
            return max(0.0, self.stopped - self.started - self.stalled_s())
        end = time.perf_counter() if now is None else now
        window = end - self.started
        if self.stalls is not None and window > 0:
            window -= self.stalls.overlap(self.started, end)
        return max(0.0, window)

    def stalled_s(self) -> float:
        """Seconds of the bot's window the loop spent stalled (given back to the bot)."""
        if self.stalls is None or self.started is None or self.stopped is None:
            return 0.0
        stalled = self._stalled
        if stalled is None:
            stalled = self._stalled = self.stalls.overlap(self.started, self.stopped)
        return stalled

    def platform_s(self) -> float:
        """Seconds the platform held the request (before the bot could see it, and while
        the loop was stalled in the bot's window)."""
        if self.started is None:
            return 0.0
        held = max(0.0, self.started - self.created) + self.reported_platform_s
        return held + self.stalled_s()


@dataclass(frozen=True, slots=True)
class Waited:
    """How :func:`wait_answer` ended."""

    #: The answer arrived (the task is done).
    answered: bool
    #: The stop signal fired first.
    stopped: bool = False
    #: The platform never started the bot's clock within its limit.
    platform_fault: bool = False


# How waits end, made once: one of them is returned for every decision, and they are only
# read.
_ANSWERED = Waited(True)
_STOPPED = Waited(False, stopped=True)
_PLATFORM_FAULT = Waited(False, platform_fault=True)
_TIMED_OUT = Waited(False)


#: While a bot's clock has not started, its wait looks again at least this often (a zero
#: budget must not spin).
_NOT_STARTED_POLL_S = 0.005


def _nothing(*_args: Any) -> None:
    """A callback that does nothing (what a closed watch keeps)."""


class _Watch:
    """What :func:`wait_answer` watches besides the answer itself, with callbacks.

    Every decision of every remote match goes through here, so the waiting task awaits
    one future (the ``target``) and is woken once, when the wait is over. The target is the
    answer's own future when the seat hands over a plain future (the gateway's hub does):
    no future of the wait's own is made. For anything else (a task asking through Redis)
    it is a future of the wait's, resolved when the task is done.

    One timer (of the loop's :class:`Deadlines`) serves the whole wait: armed for the
    budget when the wait begins, it can only fire early (the bot's time starts later, when
    its request is written, and stalls are given back), so when it fires it looks at the
    clock and arms itself again for what is left, or for the platform's limit while the
    clock has not started. When the time is up, or the stop signal fires, the watch notes
    why and cancels the target, which wakes the task: a plain future is the request
    itself, withdrawn (as an unanswered request is in any case). Most answers come long
    before the budget is up: one timer made and cancelled.
    """

    __slots__ = ("budget_s", "clock", "deadlines", "expected", "grace", "graced", "on_done",
                 "on_stop", "platform_at", "platform_fault", "stop", "stopped", "target",
                 "task", "timed_out", "timer")

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        task: asyncio.Future[Any],
        clock: BotClock,
        budget_s: float,
        stop: asyncio.Future[Any] | None,
        platform_limit_s: float,
    ) -> None:
        self.task = task
        # The bound methods made once, so that the same objects are taken back off the
        # futures at the end.
        self.on_done: Callable[[Any], None] = _nothing
        if type(task) is asyncio.Future:
            self.target = task
        else:
            self.target = new_future(loop)
            self.on_done = self._done
            task.add_done_callback(self.on_done)
        self.clock = clock
        self.budget_s = budget_s
        self.stop = stop
        self.deadlines = _deadlines(loop, clock)
        self.timer: Deadline | None = None
        self.platform_at = self.deadlines.now() + platform_limit_s
        self.expected = 0.0
        self.grace = READ_GRACE_S
        self.graced = False
        self.timed_out = False
        self.platform_fault = False
        self.stopped = False
        self.on_stop: Callable[[Any], None] = _nothing
        if stop is not None:
            self.on_stop = self._stop_signal
            stop.add_done_callback(self.on_stop)
        if clock.started is None:
            self._arm(min(max(budget_s, _NOT_STARTED_POLL_S), platform_limit_s))
        else:
            self._arm(budget_s - clock.bot_s())

    @property
    def ended(self) -> bool:
        """The watch, not the answer, ended the wait."""
        return self.timed_out or self.platform_fault or self.stopped

    def _arm(self, delay: float) -> None:
        if self.timer is not None:
            self.deadlines.cancel(self.timer)
        self.expected = self.deadlines.now() + max(0.0, delay)
        self.timer = self.deadlines.call_at(self.expected, self._tick)

    def _done(self, _fut: Any) -> None:
        if not self.target.done():
            self.target.set_result(None)

    def _stop_signal(self, _fut: Any) -> None:
        self.stopped = True
        self.target.cancel()

    def _tick(self) -> None:
        self.timer = None
        clock = self.clock
        if clock.started is None:
            left = self.platform_at - self.deadlines.now()
            if left <= 0:
                self.platform_fault = True
                self.target.cancel()
            else:  # still inside the platform: look again a budget later
                self._arm(min(max(self.budget_s, _NOT_STARTED_POLL_S), left))
            return
        if not self.graced:  # a budget timer, not the grace look
            # A timer that fired late means the loop was busy: answers may be waiting to
            # be read behind the same backlog.
            lateness = self.deadlines.now() - self.expected
            self.grace = min(READ_GRACE_MAX_S, max(self.grace, lateness))
        left = self.budget_s - clock.bot_s()
        if left > 0:  # the bot's time started late, or stalls were given back: time left
            self.graced = False
            self._arm(left)
        elif not self.graced:
            # Time is up by the clock, but an answer may be waiting to be read behind the
            # same backlog, and a stall may not be recorded yet: look once more.
            self.graced = True
            self._arm(self.grace)
        else:
            self.timed_out = True
            self.target.cancel()

    def verdict(self) -> Waited:
        if self.stopped:
            return _STOPPED
        if self.platform_fault:
            return _PLATFORM_FAULT
        return _TIMED_OUT

    def close(self) -> None:
        if self.timer is not None:
            self.deadlines.cancel(self.timer)
            self.timer = None
        if self.stop is not None:
            self.stop.remove_done_callback(self.on_stop)
        if self.target is not self.task:
            self.task.remove_done_callback(self.on_done)
        # The bound methods refer back to the watch: dropped, it is freed at once rather
        # than by the garbage collector.
        self.on_stop = self.on_done = _nothing


async def wait_answer(
    task: asyncio.Future[Any],
    clock: BotClock,
    budget_s: float,
    *,
    stop: asyncio.Future[Any] | None = None,
    platform_limit_s: float = PLATFORM_LIMIT_S,
) -> Waited:
    """Wait for ``task`` (a seat's decision) on the bot's clock, not the wall clock.

    Returns once the answer is in (``answered``: the task is done, with a result, an
    error, or cancelled by the seat itself), the stop signal fired, the bot's budget is
    spent or the platform failed to start the clock in time. The caller cancels the task
    when it did not answer; a plain future (the hub's) is already withdrawn then, and
    cancelling the wait withdraws it too.
    """
    if task.done():
        return _ANSWERED
    if stop is not None and stop.done():
        return _STOPPED
    # The task's own loop is the running one, and asking it costs no getpid() system call
    # (asyncio.get_running_loop makes one, on every decision).
    watch = _Watch(task.get_loop(), task, clock, budget_s, stop, platform_limit_s)
    try:
        await watch.target
    except asyncio.CancelledError:
        me = asyncio.current_task()
        if me is not None and me.cancelling():
            raise  # the wait itself was cancelled
    except Exception:
        pass  # the seat failed: its error is the task's, for the caller
    finally:
        watch.close()
    # An answer that came in as the time ran out still counts, as it always did when the
    # task was done by the time the wait woke.
    if watch.ended and (task.cancelled() or not task.done()):
        return watch.verdict()
    return _ANSWERED
