"""Admission control: a busy gateway makes new matches wait instead of slowing the ones
in play.

One gateway process plays its matches on one event loop. Past a certain number of matches
the loop is busy all the time, and everything on it gets late: requests are written late
(free for the bots, thanks to the fair clock), but answers are also *read* late, and a late
read is charged to the bot. Played on, an overloaded gateway turns honest bots' answers
into timeouts, strikes and forfeits (100 matches of bots answering at once with a 50 ms
clock lost a fifth of their decisions that way).

So the gateway limits the matches it plays at once, and the limit follows the load: a
small task measures how late the event loop wakes it (the loop's lag, the delay every
callback on the loop suffers). While the lag stays under a target, the limit grows when
matches are waiting; when the lag goes over it, the limit shrinks towards what the loop
managed. Matches over the limit wait in arrival order, before their first deal, so no
match ever starts only to be starved. This is the additive-increase / multiplicative-
decrease scheme of congestion control, with the loop lag as the congestion signal; an
organiser can also fix an upper bound (``--max-matches``).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os

from arena.observability import metrics as m
from arena.referee.clock import LoopStalls

log = logging.getLogger(__name__)

#: Loop lag (seconds) the controller keeps under: a few per cent of the shortest clock
#: worth playing (50 ms), and well above what a healthy loop shows (tens of microseconds).
TARGET_LAG_S = 0.002
#: Platform delay of decision requests (seconds from the referee's question to the write
#: on the bot's stream) the controller keeps under. A stream writes one message per turn
#: of the loop, so a busy loop shows here first, as queues in front of the bots' streams.
TARGET_DELAY_S = 0.005
#: How often the limit is reconsidered (the loop's lag is sampled every few milliseconds
#: by :class:`~arena.referee.clock.LoopStalls`).
ADJUST_S = 0.25
#: Limits never go below this (a loaded machine, not the gateway, may cause the lag).
MIN_LIMIT = 4
START_LIMIT = 16


def default_min_limit() -> int:
    return max(MIN_LIMIT, 2 * (os.cpu_count() or 1))


async def stop_task(task: asyncio.Task[None] | None) -> None:
    """Cancel a gateway's background task (a monitor, a sweeper) and wait until it has
    stopped, so that nothing of it runs on once its owner is closed."""
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


class Admission:
    """How many matches may be played at once; :meth:`acquire` waits for a place."""

    def __init__(
        self,
        *,
        max_matches: int = 0,
        adaptive: bool = True,
        target_lag_s: float = TARGET_LAG_S,
        target_delay_s: float = TARGET_DELAY_S,
        min_limit: int | None = None,
        start_limit: int = START_LIMIT,
    ) -> None:
        if max_matches < 0:
            raise ValueError("max_matches must not be negative (0: no fixed bound)")
        self.max_matches = max_matches
        self.adaptive = adaptive
        self.target_lag_s = target_lag_s
        self.target_delay_s = target_delay_s
        self._delays: list[float] = []
        self.min_limit = min(
            min_limit if min_limit is not None else default_min_limit(),
            max_matches or 1 << 30,
        )
        bound = max_matches or 1 << 30
        self.limit = min(bound, max(self.min_limit, start_limit)) if adaptive else bound
        self.running = 0
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._monitor: asyncio.Task[None] | None = None
        #: The largest lag of the last adjustment window, for the log and the tests.
        self.last_lag_s = 0.0
        self.last_delay_s = 0.0
        self.admitted = 0

    # --- places -----------------------------------------------------------------------

    @property
    def waiting(self) -> int:
        return sum(1 for w in self._waiters if not w.done())

    async def acquire(self) -> None:
        """Wait for a place (first come, first served)."""
        self._ensure_monitor()
        if self.running < self.limit and not self._waiters:
            self._take()
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        self._publish()
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self.release()  # admitted just as it was cancelled: give the place back
            raise
        finally:
            with contextlib.suppress(ValueError):
                self._waiters.remove(fut)
            self._publish()

    def _take(self) -> None:
        self.running += 1
        self.admitted += 1
        self._publish()

    def release(self) -> None:
        self.running = max(0, self.running - 1)
        self._admit()
        self._publish()

    def _admit(self) -> None:
        while self._waiters and self.running < self.limit:
            fut = self._waiters.popleft()
            if not fut.done():
                self._take()
                fut.set_result(None)

    def _publish(self) -> None:
        m.GATEWAY_MATCHES_WAITING.set(self.waiting)
        m.GATEWAY_MATCH_LIMIT.set(self.limit)

    # --- the load signal --------------------------------------------------------------

    def observe_delay(self, seconds: float) -> None:
        """One decision request's platform delay (called by the hub for every answer)."""
        if len(self._delays) < 10_000:
            self._delays.append(seconds)

    def _ensure_monitor(self) -> None:
        if self.adaptive and (self._monitor is None or self._monitor.done()):
            self._monitor = asyncio.get_running_loop().create_task(
                self._watch(), name="admission monitor"
            )

    async def close(self) -> None:
        await stop_task(self._monitor)
        self._monitor = None

    async def _watch(self) -> None:
        stalls = LoopStalls.current()
        stalls.take_lags()
        while True:
            await asyncio.sleep(ADJUST_S)
            lags = stalls.take_lags()
            for lag in lags:
                m.EVENT_LOOP_LAG_SECONDS.observe(lag)
            self.adjust(lags, self._delays)
            self._delays = []

    def adjust(self, lags: list[float], delays: list[float] | None = None) -> None:
        """Move the limit after one window of lag (and platform delay) samples."""
        if not lags:
            return
        # The 90th percentiles: one slow callback (a big message, a garbage collection)
        # is not congestion; a loop that is late most of the time is.
        lag = _p90(lags)
        delay = _p90(delays) if delays else 0.0
        self.last_lag_s = lag
        self.last_delay_s = delay
        bound = self.max_matches or 1 << 30
        old = self.limit
        # Load as a fraction of the target: over 1 is congestion.
        load = max(lag / self.target_lag_s, delay / self.target_delay_s)
        if load > 1:
            if self.running > self.min_limit:
                self.limit = max(self.min_limit, min(self.limit, int(self.running * 0.8)))
        elif self.waiting and self.running >= self.limit:
            step = max(1, self.limit // 4) if load < 0.5 else 1
            self.limit = min(bound, self.limit + step)
        if self.limit != old:
            log.debug("admission: limit %d -> %d (loop lag %.1f ms, platform delay %.1f ms, "
                      "%d running, %d waiting)", old, self.limit, lag * 1000, delay * 1000,
                      self.running, self.waiting)
            self._admit()
            self._publish()


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
