"""Matches started by the organiser and run inside the gateway process.

Each match runs as a task with the referee's match runner; remote bots sit in it as
:class:`~arena.server.hub.RemoteSeat` objects. Every public event is kept in the match's log
so a spectator who starts watching late still sees the match from its first event.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc

from arena.proto.thousand.v1 import common_pb2
from arena.referee.types import JSON, MatchResult, MatchSpec, Seat, TimeControl
from arena.server import convert
from arena.server.admission import Admission
from arena.server.auth import BotRegistry
from arena.server.hub import BotHub, RemoteSeat

log = logging.getLogger(__name__)

REMOTE_PREFIX = "remote:"


class MatchError(Exception):
    """A match request that cannot be carried out, with the gRPC status to answer."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(eq=False)
class RunningMatch:
    spec: MatchSpec
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    events: list[common_pb2.MatchEvent] = field(default_factory=list)
    encoder: convert.EventEncoder = field(default_factory=convert.EventEncoder)
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)
    task: asyncio.Task[None] | None = None
    result: MatchResult | None = None
    finished: bool = False


ResultHook = Callable[[MatchResult], Awaitable[None] | None]


class MatchManager:
    """Starts, tracks and drains the gateway's matches."""

    def __init__(
        self,
        hub: BotHub,
        registry: BotRegistry,
        on_result: ResultHook | None = None,
        keep_finished: int = 1000,
        admission: Admission | None = None,
        routing_url: str | None = None,
    ) -> None:
        #: With Redis routing (several gateways serving one pool of bots), a match's bots
        #: are reached here or through Redis, wherever they are connected.
        self.routing_url = routing_url
        self.hub = hub
        self.registry = registry
        self.on_result = on_result
        self.keep_finished = keep_finished
        self.admission = admission if admission is not None else Admission()
        hub.on_delay = self.admission.observe_delay
        self._matches: dict[str, RunningMatch] = {}
        self._finished_order: list[str] = []
        self._accepting = True
        self._counter = itertools.count(1)

    # --- starting ---------------------------------------------------------------------

    def _ref(self, ref: str) -> str:
        """A registered bot's bare name means that remote bot."""
        if ":" not in ref and self.registry.exists(ref):
            return REMOTE_PREFIX + ref
        return ref

    def remote_seat(self, ref: str) -> Seat:
        """The runner's resolver for ``remote:NAME``: a registered bot of this gateway."""
        name = ref.removeprefix(REMOTE_PREFIX)
        if not self.registry.exists(name):
            raise ValueError(f"no bot named {name!r} is registered with this gateway")
        if self.routing_url is not None:
            from arena.server.routing import HybridSeat

            return HybridSeat(self.hub, name, self.routing_url)
        return RemoteSeat(self.hub, name)

    def _rules(self, preset: str, options: dict[str, Any]) -> JSON:
        from arena.engine import Rules

        if not isinstance(options, dict):
            raise MatchError(grpc.StatusCode.INVALID_ARGUMENT, "options_json must be an object")
        try:
            rules = Rules.preset(preset, **options)
        except (ValueError, TypeError, KeyError) as exc:
            raise MatchError(grpc.StatusCode.INVALID_ARGUMENT, f"bad rules: {exc}") from None
        data: JSON = rules.to_json()
        return data

    def _new_id(self, seed: str, bots: Sequence[str]) -> str:
        text = f"{time.time_ns()}/{next(self._counter)}/{seed}/{','.join(bots)}"
        return "m-" + hashlib.sha256(text.encode()).hexdigest()[:16]

    async def start(
        self,
        *,
        preset: str,
        options: dict[str, Any],
        seed: str,
        bots: Sequence[str],
        time_control: tuple[int, int, int] | None = None,
        max_deals: int | None = None,
        match_id: str | None = None,
    ) -> str:
        if not self._accepting:
            raise MatchError(
                grpc.StatusCode.UNAVAILABLE, "the gateway is shutting down; no new matches"
            )
        if not seed:
            raise MatchError(grpc.StatusCode.INVALID_ARGUMENT, "a seed is required")
        if not bots:
            raise MatchError(grpc.StatusCode.INVALID_ARGUMENT, "name one bot per seat")
        if match_id is not None and match_id in self._matches:
            raise MatchError(grpc.StatusCode.ALREADY_EXISTS, f"match {match_id!r} exists")
        if max_deals is not None and max_deals < 1:
            raise MatchError(grpc.StatusCode.INVALID_ARGUMENT, "max_deals must be at least 1")
        tc = TimeControl()
        if time_control is not None:
            decision_ms, bank_ms, strikes = time_control
            if decision_ms < 1 or bank_ms < 0 or strikes < 1:
                raise MatchError(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    "time control needs decision_ms >= 1, bank_ms >= 0 and strike_limit >= 1",
                )
            tc = TimeControl(decision_ms=decision_ms, bank_ms=bank_ms, strike_limit=strikes)
        refs = tuple(self._ref(ref) for ref in bots)
        rules = self._rules(preset, options)
        spec = MatchSpec(
            match_id=match_id or self._new_id(seed, refs),
            rules=rules,
            seed=seed,
            bots=refs,
            time_control=tc,
            max_deals=max_deals,
        )
        seats = self._resolve(spec)
        match = RunningMatch(spec=spec)
        self._matches[spec.match_id] = match
        match.task = asyncio.create_task(self._run(match, seats), name=f"match {spec.match_id}")
        log.info("match %s started: %s", spec.match_id, ", ".join(bots))
        return spec.match_id

    def _resolve(self, spec: MatchSpec) -> list[Seat]:
        from arena.referee.runner import match_rules, resolve_seats

        try:
            players = match_rules(spec).players
        except ValueError as exc:
            raise MatchError(grpc.StatusCode.INVALID_ARGUMENT, f"bad rules: {exc}") from None
        if len(spec.bots) != players:
            raise MatchError(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"these rules seat {players} players; {len(spec.bots)} bots were named",
            )
        try:
            return resolve_seats(spec, self.remote_seat)
        except ValueError as exc:
            code = grpc.StatusCode.INVALID_ARGUMENT
            if "registered" in str(exc):
                code = grpc.StatusCode.NOT_FOUND
            raise MatchError(code, str(exc)) from None

    async def _run(self, match: RunningMatch, seats: list[Seat]) -> None:
        from arena.referee.runner import run_match

        async def record(event: JSON) -> None:
            await self._append(match, event)

        admitted = False
        try:
            admitted = await self._admit(match)
            match.result = await run_match(match.spec, seats, on_event=record, stop=match.stop)
        except Exception:
            log.exception("match %s failed", match.spec.match_id)
        finally:
            if admitted:
                self.admission.release()
            match.finished = True
            self.hub.release_match(match.spec.match_id)
            async with match.changed:
                match.changed.notify_all()
            self._finished_order.append(match.spec.match_id)
            while len(self._finished_order) > self.keep_finished:
                self._matches.pop(self._finished_order.pop(0), None)
        result = match.result
        if result is not None:
            log.info("match %s ended: %s %s", result.match_id, result.status, result.scores)
            if self.on_result is not None:
                maybe = self.on_result(result)
                if maybe is not None:
                    await maybe

    async def _admit(self, match: RunningMatch) -> bool:
        """Wait for admission control to give the match a place (False: stopped first,
        and the runner then records it as aborted before its first deal)."""
        acquire = asyncio.ensure_future(self.admission.acquire())
        stopped = asyncio.ensure_future(match.stop.wait())
        try:
            await asyncio.wait({acquire, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
        if acquire.done() and not acquire.cancelled() and acquire.exception() is None:
            return True
        acquire.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await acquire
        return False

    async def _append(self, match: RunningMatch, event: JSON) -> None:
        match.events.append(match.encoder.encode(match.spec.match_id, event))
        async with match.changed:
            match.changed.notify_all()

    # --- watching ---------------------------------------------------------------------

    def watch(self, match_id: str) -> AsyncIterator[common_pb2.MatchEvent]:
        match = self._matches.get(match_id)
        if match is None:
            raise MatchError(grpc.StatusCode.NOT_FOUND, f"no match {match_id!r} in this gateway")
        return self._follow(match)

    async def _follow(self, match: RunningMatch) -> AsyncIterator[common_pb2.MatchEvent]:
        position = 0
        while True:
            while position < len(match.events):
                yield match.events[position]
                position += 1
            if match.finished:
                return
            async with match.changed:
                await match.changed.wait_for(
                    lambda seen=position: match.finished or seen < len(match.events)  # type: ignore[misc]
                )

    # --- state and shutdown -----------------------------------------------------------

    async def wait(self, match_id: str) -> MatchResult | None:
        """Wait for a match to end; its result (None if it failed or is unknown)."""
        match = self._matches.get(match_id)
        if match is None:
            return None
        if match.task is not None:
            await asyncio.wait({match.task})
        return match.result

    def stop(self, match_id: str) -> None:
        """Ask a running match to stop; it ends as ``aborted``."""
        match = self._matches.get(match_id)
        if match is not None:
            match.stop.set()

    def result(self, match_id: str) -> MatchResult | None:
        match = self._matches.get(match_id)
        return match.result if match is not None else None

    def running(self) -> int:
        return sum(1 for m in self._matches.values() if not m.finished)

    def stop_accepting(self) -> None:
        """Refuse new matches from now on (the gateway is stopping)."""
        self._accepting = False

    async def drain(self, grace_s: float) -> None:
        """Refuse new matches, let running ones finish for ``grace_s``, then stop the rest
        (the runner records them as aborted)."""
        self._accepting = False
        tasks = [m.task for m in self._matches.values() if m.task is not None and not m.finished]
        if not tasks:
            return
        log.info("waiting up to %.1f s for %d running matches", grace_s, len(tasks))
        _, still = await asyncio.wait(tasks, timeout=grace_s)
        if still:
            log.warning("stopping %d matches still running after the grace period", len(still))
            for m in self._matches.values():
                if not m.finished:
                    m.stop.set()
            await asyncio.wait(still, timeout=max(5.0, grace_s))
