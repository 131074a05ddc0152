"""The check a new version plays before it may enter a tournament or a league.

One short seeded match (``CHECK_DEALS`` deals of the classic rules) against the built-in
``greedy`` and ``random`` bots, in the sandbox, under the same limits as any match. The
version passes when its seat ends ``ok`` with no strike: it started, spoke the protocol,
played only legal moves and answered in time. Otherwise it fails, and its author reads
why (the seat's status, what went wrong, the log of the check match) with
``arena bot versions`` and ``arena bot logs``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Callable

from arena.match.types import MatchSpec, TimeControl

from . import status as st
from .play import HostedBots, build_seats, play_hosted
from .seat import PlatformFault
from .store import FAILED, PASSED, HostedStore, Version

log = logging.getLogger(__name__)

CHECK_DEALS = 4
CHECK_TIME = TimeControl(decision_ms=2000, bank_ms=10000, strike_limit=3)
CHECK_OPPONENTS = ("greedy", "random")
#: Platform failures of one check before the version is left for a later try.
CHECK_ATTEMPTS = 3


def check_spec(version: Version, attempt: int = 0) -> MatchSpec:
    """The check match: seeded by the version's hash, so a check is the same every time."""
    seed = hashlib.sha256(f"check/{version.hash}".encode()).hexdigest()
    return MatchSpec(
        match_id=f"check-{version.short}-{attempt}",
        rules={"preset": "classic"},
        seed=seed,
        bots=(f"hosted:{version.bot}@{version.hash}", *CHECK_OPPONENTS),
        max_deals=CHECK_DEALS,
        time_control=CHECK_TIME,
    )


async def check_version(bots: HostedBots, version: Version) -> Version:
    """Play the check and record its verdict (and its seat run, with the log)."""
    store = bots.store
    last: PlatformFault | None = None
    for attempt in range(CHECK_ATTEMPTS):
        spec = check_spec(version, attempt)
        try:
            seats = await asyncio.to_thread(build_seats, spec, bots)
            result, runs = await play_hosted(spec, seats)
        except PlatformFault as exc:
            last = exc
            log.warning("check of %s voided by the platform: %s", version.participant, exc)
            continue
        run = runs[0]
        stats = result.seat_stats[0]
        await asyncio.to_thread(store.record_runs, spec.match_id, runs)
        if run.status == st.OK and stats.strikes == 0:
            status, reason = PASSED, ""
        else:
            problems = []
            if stats.timeouts:
                problems.append(f"{stats.timeouts} timeout(s)")
            if stats.illegal:
                problems.append(f"{stats.illegal} illegal move(s)")
            if stats.malformed:
                problems.append(f"{stats.malformed} malformed answer(s)")
            reason = f"{run.label}: {run.detail}" if run.detail else run.label
            if problems and run.status == st.OK:
                reason = ", ".join(problems)
            reason += f" (see: arena bot logs {version.bot} --match {spec.match_id})"
            status = FAILED
        await asyncio.to_thread(store.set_status, version.bot, version.hash, status, reason,
                                spec.match_id)
        found = await asyncio.to_thread(store.version, version.bot, version.hash)
        assert found is not None
        return found
    reason = f"the check could not be played (the arena's fault, not the bot's): {last}"
    await asyncio.to_thread(store.set_status, version.bot, version.hash, "checking", reason)
    found = await asyncio.to_thread(store.version, version.bot, version.hash)
    assert found is not None
    return found


class Checker:
    """Plays the checks of new versions one at a time, on the running event loop."""

    def __init__(self, store: HostedStore,
                 on_done: Callable[[Version], None] | None = None) -> None:
        self.bots = HostedBots(store)
        self.on_done = on_done
        self._queue: asyncio.Queue[Version] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._queued: set[tuple[str, str]] = set()

    def submit(self, version: Version) -> None:
        key = (version.bot, version.hash)
        if key in self._queued:
            return
        self._queued.add(key)
        self._queue.put_nowait(version)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run(), name="checks")

    async def resume(self) -> None:
        """Queue the versions left unchecked (a gateway stopped during a check)."""
        versions = await asyncio.to_thread(self.bots.store.versions)
        for version in reversed(versions):
            if version.status == "checking":
                self.submit(version)

    async def _run(self) -> None:
        while not self._queue.empty():
            version = await self._queue.get()
            try:
                done = await check_version(self.bots, version)
            except Exception:
                log.exception("the check of %s failed", version.participant)
                continue
            finally:
                self._queued.discard((version.bot, version.hash))
            log.info("hosted bot %s: check %s", done.participant, done.status)
            if self.on_done is not None:
                self.on_done(done)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
