"""Matches started by the organiser and run inside the gateway process.

Each match runs as a task with the referee's match runner; remote bots sit in it as
:class:`~arena.server.hub.RemoteSeat` objects. Every public event is kept in the match's log
so a spectator who starts watching late still sees the match from its first event.

Memory stays bounded however long the gateway runs: a log holds its events serialized and
compressed a chunk at a time (about 10 bytes an event instead of about 900 as message
objects), and has a byte bound beyond which its oldest chunks are dropped (a spectator who
starts later is told how many events it missed). A finished match keeps its log for a while
(``keep_logs`` matches), then only its result without the replay (which went to the
``on_result`` hook, e.g. the results file), and after ``keep_finished`` matches nothing.

A match started without a seed gets a secret one (:mod:`arena.engine.commitment`): its
commitment goes to the seats at ``match_start`` and to the organiser in the reply, and the
seed is revealed in ``match_end``. A given seed with a remote bot seated needs the
organiser's explicit ``public_seed``: the bot could otherwise guess the seed and derive
every deal. Match ids are random, so they tell a seat nothing about the seed.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import secrets
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import grpc
from thousand_bot.proto.thousand.v1 import common_pb2

from arena.engine import commitment as cm
from arena.match.types import JSON, MatchResult, MatchSpec, Seat, TimeControl
from arena.server.admission import Admission
from arena.server.auth import BotRegistry, is_reserved
from arena.server.eventlog import LOG_MAX_BYTES, EventLog
from arena.server.hub import BotHub, RemoteSeat

log = logging.getLogger(__name__)

REMOTE_PREFIX = "remote:"


class MatchError(Exception):
    """A match request that cannot be carried out, with the gRPC status to answer."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code


#: Finished matches whose events are still kept for spectators, and finished matches whose
#: results are kept at all.
KEEP_LOGS = 100
KEEP_FINISHED = 1000
#: The event type a late spectator receives first when the oldest events were dropped.
TRUNCATED = "log_truncated"


@dataclass(eq=False)
class RunningMatch:
    spec: MatchSpec
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    log: EventLog | None = field(default_factory=EventLog)
    task: asyncio.Task[None] | None = None
    result: MatchResult | None = None
    finished: bool = False
    #: The replay, as compressed JSON, while the gateway keeps it (with the event log).
    replay: bytes | None = None

    def tell(self) -> None:
        """Something new (the match ended): wake the spectators waiting."""
        if self.log is not None:
            self.log.tell()


ResultHook = Callable[[MatchResult], Awaitable[None] | None]


@dataclass(eq=False)
class MatchManager:
    """Starts, tracks and drains the gateway's matches."""

    hub: BotHub
    registry: BotRegistry
    on_result: ResultHook | None = None
    keep_finished: int = KEEP_FINISHED
    keep_logs: int = KEEP_LOGS
    log_max_bytes: int = LOG_MAX_BYTES
    admission: Admission = field(default_factory=Admission)
    #: With Redis routing (several gateways serving one pool of bots), a match's bots
    #: are reached here or through Redis, wherever they are connected.
    routing_url: str | None = None
    #: A results store (``arena serve --store``) that keeps every finished match, where
    #: ``arena web`` shows it; its live events go beside it (or to the routing Redis).
    store_url: str | None = None
    #: How the results and the live pages name this gateway (its address).
    name: str = "gateway"
    _matches: dict[str, RunningMatch] = field(default_factory=dict, init=False, repr=False)
    _finished_order: collections.deque[str] = field(
        default_factory=collections.deque, init=False, repr=False
    )
    _accepting: bool = field(default=True, init=False, repr=False)

    def __post_init__(self) -> None:
        self.hub.on_delay = self.admission.observe_delay

    # --- starting ---------------------------------------------------------------------

    def _ref(self, ref: str) -> str:
        """A registered bot's bare name means that remote bot."""
        if ":" not in ref and not is_reserved(ref) and self.registry.exists(ref):
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

    def _new_id(self) -> str:
        """A fresh random id: nothing in it depends on the seed, the bots or the time."""
        while True:
            match_id = "m-" + secrets.token_hex(8)
            if match_id not in self._matches:
                return match_id

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
        public_seed: bool = False,
    ) -> str:
        """Start a match and return its id; an empty ``seed`` means a secret one."""
        if not self._accepting:
            raise MatchError(
                grpc.StatusCode.UNAVAILABLE, "the gateway is shutting down; no new matches"
            )
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
        for ref in refs:
            if ref.startswith("cmd:"):
                # A gateway starts no program for whoever holds the organiser token.
                raise MatchError(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    f"bot {ref[:80]!r}: a gateway does not run programs; connect the program "
                    "with thousand-bot run --stdio -- COMMAND and name the bot it plays as",
                )
        remote = any(ref.startswith(REMOTE_PREFIX) for ref in refs)
        for ref in refs:  # an unknown bot is the first thing to fix
            name = ref.removeprefix(REMOTE_PREFIX)
            if ref.startswith(REMOTE_PREFIX) and not self.registry.exists(name):
                raise MatchError(
                    grpc.StatusCode.NOT_FOUND,
                    f"no bot named {name!r} is registered with this gateway",
                )
        if seed and remote and not public_seed:
            raise MatchError(
                grpc.StatusCode.INVALID_ARGUMENT,
                "a given seed with a remote bot seated lets that bot derive every deal from a "
                "guess: leave the seed empty for a secret one (committed at the start, revealed "
                "at the end), or set public_seed to play this seed anyway",
            )
        rules = self._rules(preset, options)
        match_id = match_id or self._new_id()
        commitment = None
        if not seed:
            seed = cm.new_secret()
            commitment = cm.for_match(match_id, seed)
        spec = MatchSpec(
            match_id=match_id,
            rules=rules,
            seed=seed,
            bots=refs,
            time_control=tc,
            max_deals=max_deals,
            commitment=commitment,
        )
        seats = self._resolve(spec)
        match = RunningMatch(spec=spec, log=EventLog(self.log_max_bytes, spec.match_id))
        self._matches[spec.match_id] = match
        match.task = asyncio.create_task(self._run(match, seats), name=f"match {spec.match_id}")
        log.info("match %s started: %s", spec.match_id, ", ".join(bots))
        if seed and remote and commitment is None:
            log.warning("match %s: played with a public seed while remote bots are seated; "
                        "they can derive every deal from it", spec.match_id)
        return spec.match_id

    def seed_commitment(self, match_id: str) -> str:
        """The commitment to a match's secret seed; empty for a public seed."""
        match = self._matches.get(match_id)
        if match is None or match.spec.commitment is None:
            return ""
        return str(match.spec.commitment["seed_commitment"])

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

        admitted = False
        publisher = self._publisher(match.spec)
        try:
            admitted = await self._admit(match)
            hook = match.log.record if match.log is not None else None
            if publisher is not None:
                record, push = hook, publisher.push

                def both(event: Mapping[str, Any]) -> None:
                    if record is not None:
                        record(event)
                    push(dict(event) if not isinstance(event, dict) else event)

                hook = both
            match.result = await run_match(match.spec, seats, stop=match.stop, on_event_nowait=hook)
        except Exception:
            log.exception("match %s failed", match.spec.match_id)
        finally:
            if publisher is not None:
                publisher.close()
            if admitted:
                self.admission.release()
            match.finished = True
            self.hub.release_match(match.spec.match_id)
            match.tell()
            self._finished_order.append(match.spec.match_id)
            self._trim()
        result = match.result
        if result is not None:
            log.info("match %s ended: %s %s", result.match_id, result.status, result.scores)
            if self.store_url is not None and result.status != "aborted":
                try:
                    await asyncio.to_thread(self._store, result)
                except Exception as exc:  # the match is played; its row is what is lost
                    log.warning("match %s not kept in %s: %s", result.match_id,
                                self._shown_store(), exc)
            try:
                if self.on_result is not None:
                    maybe = self.on_result(result)
                    if maybe is not None:
                        await maybe
            finally:
                # The replay went to the hook; the gateway keeps the summary, and for its
                # latest matches the replay packed, for GetMatchResult.
                if result.replay is not None and match.log is not None:
                    match.replay = zlib.compress(
                        json.dumps(result.replay, separators=(",", ":")).encode(), 6)
                match.result = replace(result, replay=None)

    def _publisher(self, spec: MatchSpec) -> Any:
        if self.routing_url is None and self.store_url is None:
            return None
        from arena.observability.live import gateway_publisher

        return gateway_publisher(spec.match_id, spec.rules, list(spec.bots), worker=self.name,
                                 redis_url=self.routing_url, db_url=self.store_url)

    def _shown_store(self) -> str:
        from arena.tournament.store import redact_url

        return redact_url(self.store_url or "")

    def _store(self, result: MatchResult) -> None:
        """Keep a finished match in the results store: a row of no tournament (the web
        lists it among the matches, with its replay)."""
        import time
        from dataclasses import asdict

        from arena.tournament.model import ResultRecord
        from arena.tournament.store import shared_store

        assert self.store_url is not None
        shared_store(self.store_url).insert_result(ResultRecord(
            match_id=result.match_id, tournament="", index=0, group="", round=0,
            players=list(result.bots), bots=list(result.bots), seed=result.seed,
            status=result.status, scores=[int(x) for x in result.scores],
            ranks=[int(r) for r in result.ranks], deals=int(result.deals),
            seat_stats=[asdict(st) for st in result.seat_stats],
            forfeit_seat=result.forfeit_seat, duration_s=float(result.duration_s),
            finished_at=time.time(), worker=self.name, replay=result.replay,
        ), with_replay=False)

    def _trim(self) -> None:
        """Drop the logs of all but the newest ``keep_logs`` finished matches, and every
        trace of those beyond ``keep_finished``."""
        order = self._finished_order
        while len(order) > self.keep_finished:
            self._matches.pop(order.popleft(), None)
        if len(order) > self.keep_logs:
            old = self._matches.get(order[len(order) - self.keep_logs - 1])
            if old is not None:
                old.log = None
                old.replay = None

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

    # --- watching ---------------------------------------------------------------------

    def watch(self, match_id: str) -> AsyncIterator[common_pb2.MatchEvent]:
        match = self._matches.get(match_id)
        if match is None:
            raise MatchError(grpc.StatusCode.NOT_FOUND, f"no match {match_id!r} in this gateway")
        if match.log is None:
            summary = ""
            if match.result is not None:
                scores = "/".join(str(s) for s in match.result.scores)
                summary = f" ({match.result.status}, scores {scores})"
            raise MatchError(
                grpc.StatusCode.NOT_FOUND,
                f"match {match_id!r} has finished{summary} and this gateway no longer keeps "
                f"its events (it keeps those of the last {self.keep_logs} finished matches); "
                "its replay is where the gateway's results go (arena serve --results)",
            )
        return self._follow(match, match.log)

    async def _follow(
        self, match: RunningMatch, events: EventLog
    ) -> AsyncIterator[common_pb2.MatchEvent]:
        position = 0
        while True:
            news = events.listen()
            first = events.first
            if position < first:  # dropped before this spectator read them
                yield _truncated(match.spec.match_id, position, first, events.max_bytes)
                position = first
                continue  # more may have been dropped while it was told
            batch = events.read(position)
            for message in batch:
                yield message
            position += len(batch)
            if batch:
                continue
            if match.finished:
                return
            await news.wait()

    def memory(self) -> dict[str, int]:
        """What the matches hold: counts and the bytes of their event logs."""
        logs = [m.log for m in self._matches.values() if m.log is not None]
        return {
            "running": self.running(),
            "finished_kept": len(self._finished_order),
            "logs_kept": len(logs),
            "log_bytes": sum(log.nbytes for log in logs),
        }

    # --- state and shutdown -----------------------------------------------------------

    async def wait(self, match_id: str) -> MatchResult | None:
        """Wait for a match to end; its result (None if it failed or is unknown)."""
        match = self._matches.get(match_id)
        if match is None:
            return None
        if match.task is not None:
            await asyncio.wait({match.task})
        return match.result

    async def result_json(self, match_id: str) -> JSON:
        """A match's result with its replay, once it has ended (waits for a running one)."""
        match = self._matches.get(match_id)
        if match is None:
            raise MatchError(grpc.StatusCode.NOT_FOUND, f"no match {match_id!r} in this gateway")
        if match.task is not None:
            await asyncio.wait({match.task})
        if match.result is None:
            raise MatchError(grpc.StatusCode.NOT_FOUND,
                             f"match {match_id!r} ended without a result (see the gateway's log)")
        data = match.result.to_json()
        if match.replay is not None:
            data["replay"] = json.loads(zlib.decompress(match.replay))
        else:
            data.pop("replay", None)
        return data

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


def _truncated(match_id: str, since: int, until: int, max_bytes: int) -> common_pb2.MatchEvent:
    """What a spectator is told in place of the events ``since`` to ``until`` (excluded)
    of a very long match, dropped before it read them. It carries the sequence number of
    the last one it stands for, so the next event follows it."""
    detail = {
        "type": TRUNCATED,
        "dropped": until - since,
        "first_kept": until,
        "reason": f"the gateway keeps at most {max_bytes} bytes of one match's events; "
        "the oldest were dropped",
    }
    return common_pb2.MatchEvent(
        match_id=match_id,
        sequence=until - 1,
        type=TRUNCATED,
        detail_json=json.dumps(detail, separators=(",", ":"), sort_keys=True),
    )
