"""Playing a match that has hosted seats, wherever the match runs (a pool process, a Celery
worker, the gateway's checks): fetch each version, start the sandboxes, play, stop them,
and judge each seat.

A sandbox or runtime failure anywhere in this (:class:`~arena.hosted.seat.PlatformFault`)
voids the match: :func:`play_hosted_sync` raises instead of returning a result, and the
executor plays the match again. A bot's own failures are results like any other.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from typing import Any

from arena.match.types import MatchResult, MatchSpec, Seat, SeatResolver
from arena.sandbox import Limits

from . import status as st
from .bundle import BundleError
from .cache import BotCache
from .seat import HostedBot, HostedSeat, PlatformFault
from .status import SeatRun
from .store import HostedStore, parse_ref

log = logging.getLogger(__name__)

#: Times a voided match is played again in the same process before the run gives up.
PLATFORM_ATTEMPTS = 3


def has_hosted(bots: Sequence[str]) -> bool:
    return any(b.startswith("hosted:") for b in bots)


class HostedBots:
    """Finds hosted versions in the results store and keeps them in this host's cache."""

    def __init__(self, store: HostedStore, cache: BotCache | None = None) -> None:
        self.store = store
        self.cache = cache or BotCache()

    @classmethod
    def for_url(cls, db_url: str) -> HostedBots:
        from arena.tournament.store import shared_store

        return cls(HostedStore(shared_store(db_url)))

    def bot(self, ref: str) -> HostedBot:
        """The version a match names (``hosted:NAME@HASH``), its files on this host."""
        from arena.tournament.store import StoreError

        name, digest = parse_ref(ref)
        try:
            version = self.store.resolve(ref, playable=False)
        except StoreError as exc:
            raise PlatformFault(str(exc)) from exc
        if digest is None:
            raise PlatformFault(f"{ref}: a match must name the version it plays (@HASH)")
        try:
            files = self.cache.path(version.hash, self.store)
        except (BundleError, OSError, StoreError) as exc:
            raise PlatformFault(f"{ref}: cannot fetch version {version.short}: {exc}") from exc
        return HostedBot(ref=ref, name=name, version=version.hash, runtime=version.runtime,
                         entry=version.entry, files=files)


async def play_hosted(
    spec: MatchSpec,
    seats: Sequence[Seat],
    *,
    on_event: Any = None,
    labels: Sequence[str] | None = None,
) -> tuple[MatchResult, list[SeatRun]]:
    """Play a match whose seats are built (hosted ones among them); every sandbox is
    started before the first deal and stopped, all processes gone, before this returns."""
    from arena.referee.runner import run_match

    hosted = [s for s in seats if isinstance(s, HostedSeat)]
    result: MatchResult | None = None
    try:
        started = await asyncio.gather(*(h.start() for h in hosted), return_exceptions=True)
        faults = [e for e in started if isinstance(e, BaseException)]
        if faults:
            raise faults[0]
        result = await run_match(spec, seats, on_event, labels=labels)
    finally:
        await asyncio.gather(*(h.aclose() for h in hosted), return_exceptions=True)
        for seat in seats:
            if isinstance(seat, HostedSeat):
                continue
            close = getattr(seat, "aclose", None)
            if callable(close):
                with contextlib.suppress(Exception):
                    await close()
    runs = [
        h.run(result.seat_stats[h.seat], forfeit=result.forfeit_seat == h.seat)
        for h in hosted
    ]
    for run in runs:
        run.match_id = spec.match_id
    broken = [r for r in runs if r.status == st.SANDBOX_ERROR]
    if broken:
        raise PlatformFault(f"match {spec.match_id}: seat {broken[0].seat}: {broken[0].detail}")
    return result, runs


def build_seats(
    spec: MatchSpec,
    bots: HostedBots | None,
    resolver: SeatResolver | None = None,
    *,
    limits: Limits | None = None,
) -> list[Seat]:
    from arena.referee.runner import resolve_seat

    seats: list[Seat] = []
    for i, ref in enumerate(spec.bots):
        if ref.startswith("hosted:"):
            if bots is None:
                raise PlatformFault(f"{ref}: hosted bots need the results store")
            seats.append(HostedSeat(bots.bot(ref), seat=i, limits=limits))
        else:
            seats.append(resolve_seat(ref, i, spec, resolver))
    return seats


def play_hosted_sync(
    spec: MatchSpec,
    bots: HostedBots,
    resolver: SeatResolver | None = None,
    *,
    on_event: Any = None,
    labels: Sequence[str] | None = None,
    limits: Limits | None = None,
    attempts: int = PLATFORM_ATTEMPTS,
) -> tuple[MatchResult, list[SeatRun]]:
    """Play in a fresh event loop; a voided match is played again (up to ``attempts``
    times) before :class:`PlatformFault` reaches the caller."""
    last: PlatformFault | None = None
    for attempt in range(1, attempts + 1):
        try:
            seats = build_seats(spec, bots, resolver, limits=limits)
            return asyncio.run(play_hosted(spec, seats, on_event=on_event, labels=labels))
        except PlatformFault as exc:
            last = exc
            log.warning("match %s voided by the platform (attempt %d of %d): %s",
                        spec.match_id, attempt, attempts, exc)
    assert last is not None
    raise last
