"""The connection between a :class:`~thousand_bot.bot.Bot` and a Thousand Arena server.

One client keeps one Play stream open, answers every decision request that arrives on it
(from any number of matches) and reconnects with exponential backoff when the stream breaks.
A refused credential is final: retrying a revoked token would only hammer the server.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import inspect
import logging
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc

from thousand_bot import __version__
from thousand_bot.address import gateway_problem
from thousand_bot.bot import Bot, Request
from thousand_bot.convert import event_to_dict, observation_to_dict
from thousand_bot.proto.thousand.v1 import bot_pb2, bot_pb2_grpc
from thousand_bot.tlsfiles import read_pem

log = logging.getLogger("thousand_bot")

#: Status codes that no retry can fix: the server said no to this bot as it is.
PERMANENT_CODES = frozenset(
    {
        grpc.StatusCode.UNAUTHENTICATED,
        grpc.StatusCode.PERMISSION_DENIED,
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.UNIMPLEMENTED,
    }
)

#: The arena's keepalive settings (docs/protocol.md, "Keepalive"): ping an idle stream
#: every 20 s, give up on it when the answer takes more than 10 s.  The gateway accepts a
#: ping every 10 s, so these never count as abuse.  THOUSAND_BOT_KEEPALIVE_MS scales both
#: (tests use a fraction of a second).
KEEPALIVE_TIME_MS = 20_000
KEEPALIVE_TIMEOUT_MS = 10_000
KEEPALIVE_ENV = "THOUSAND_BOT_KEEPALIVE_MS"


def keepalive_channel_options(time_ms: int | None = None) -> list[tuple[str, Any]]:
    """Channel options for the keepalive settings, scaled to ``time_ms`` when given.

    gRPC's C core waits for a ping's answer for ``grpc.http2.ping_timeout_ms`` (a minute
    by default), not ``keepalive_timeout_ms``: both are set, or a connection whose peer
    went silent (a network cut between the two) would stand for 80 s rather than 30.
    """
    if time_ms is None:
        raw = os.environ.get(KEEPALIVE_ENV, "")
        time_ms = int(raw) if raw.isdigit() and int(raw) > 0 else KEEPALIVE_TIME_MS
    timeout = max(1, round(KEEPALIVE_TIMEOUT_MS * time_ms / KEEPALIVE_TIME_MS))
    return [
        ("grpc.keepalive_time_ms", time_ms),
        ("grpc.keepalive_timeout_ms", timeout),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.max_pings_without_data", 0),
        ("grpc.http2.ping_timeout_ms", timeout),
    ]


CHANNEL_OPTIONS = keepalive_channel_options(KEEPALIVE_TIME_MS)
#: Matches whose last event number a client keeps (to pass each event on once).
MATCHES_REMEMBERED = 4096


@dataclass(frozen=True)
class TlsSettings:
    """TLS to the gateway: the CA that signed its certificate (None: the system's CAs),
    and this bot's own certificate and key (PEM), for a gateway that asks clients for one."""

    ca: bytes | None = None
    cert: bytes | None = None
    key: bytes | None = None

    @classmethod
    def from_files(cls, ca: str | None = None, cert: str | None = None,
                   key: str | None = None) -> TlsSettings:
        """Read the PEM files; ``ValueError`` naming a file that cannot be read."""
        if bool(cert) != bool(key):
            raise ValueError("a client certificate and its key go together (--tls-cert, --tls-key)")

        def read(path: str | None, what: str) -> bytes | None:
            return read_pem(path, what) if path else None

        return cls(read(ca, "CA certificate"), read(cert, "TLS certificate"),
                   read(key, "TLS key"))

    def credentials(self) -> grpc.ChannelCredentials:
        return grpc.ssl_channel_credentials(
            root_certificates=self.ca, private_key=self.key, certificate_chain=self.cert)

#: The start of the answer sent for a decision the bot raised on: no action begins so, so
#: the referee counts it malformed (a strike and its fallback), and the rest names the error.
RAISED_PREFIX = "raised "


class BotRejected(Exception):
    """The server refused the bot for good (bad token, revoked token, bad hello)."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(f"{code.name}: {details}")
        self.code = code
        self.details = details


#: Matches whose seats the client keeps for their result line; beyond, the oldest go.
_MATCHES_REMEMBERED = 4096


def _nth(values: list[Any], k: int, default: Any = "?") -> Any:
    return values[k] if 0 <= k < len(values) else default


def _keep_unsent(unsent: list[bot_pb2.Decision], message: bot_pb2.PlayRequest) -> None:
    """Keep a decision that could not go out, to be sent after the reconnect (other
    messages belong to their session and are dropped)."""
    if message.WhichOneof("message") == "decision":
        unsent.append(message.decision)


class _Writer:
    """Writes one stream's messages in order, from a task of its own.

    gRPC lets a stream have one read and one write under way at once. Written from the
    reading loop, an answer would hold the next read back until the write finished;
    handed to this writer instead, the next request is read while the answer is on its
    way, and a write that finishes as a read comes in costs no wake-up of its own.
    Decisions that could not be written (the stream broke) are kept in ``unsent``, to be
    sent again after the reconnect; the server takes each one that is still waiting.
    """

    def __init__(self, call: Any, unsent: list[bot_pb2.Decision]) -> None:
        self.call = call
        self.unsent = unsent
        self.queue: collections.deque[bot_pb2.PlayRequest] = collections.deque()
        self.closed = False
        #: Set when there is something to write: the writer waits on it only when idle.
        self._pending = asyncio.Event()
        self._task = asyncio.ensure_future(self._run())

    def send(self, message: bot_pb2.PlayRequest) -> None:
        if self.closed:
            _keep_unsent(self.unsent, message)
            return
        self.queue.append(message)
        self._pending.set()

    async def _run(self) -> None:
        queue = self.queue
        write = self.call.write
        while True:
            while queue:
                message = queue.popleft()
                try:
                    await write(message)
                except (grpc.aio.AioRpcError, asyncio.InvalidStateError):
                    # The stream is gone: the reader finds out too, and the session ends.
                    _keep_unsent(self.unsent, message)
                    self.close()
                    return
            self._pending.clear()
            await self._pending.wait()

    def close(self) -> None:
        """Stop writing; what is still queued waits in ``unsent`` for the next session."""
        if self.closed:
            return
        self.closed = True
        self._task.cancel()
        while self.queue:
            _keep_unsent(self.unsent, self.queue.popleft())


class BotClient:
    """Runs one bot instance against a server until stopped.

    ``backoff_initial`` doubles after each failed attempt up to ``backoff_max`` (with up to
    25 % random jitter so a fleet of bots does not reconnect in lockstep) and starts over once
    a session has been welcomed. ``max_attempts`` bounds consecutive failed attempts
    (``None``: try for ever).
    """

    def __init__(
        self,
        bot: Bot,
        server: str,
        token: str,
        *,
        backoff_initial: float = 0.5,
        backoff_max: float = 30.0,
        max_attempts: int | None = None,
        channel_options: list[tuple[str, Any]] | None = None,
        on_welcome: Callable[[bot_pb2.Welcome], None] | None = None,
        tls: TlsSettings | None = None,
    ) -> None:
        if not token:
            raise ValueError("a token is required (the organiser gives one per bot)")
        self.bot = bot
        #: Gateways to connect to, in order: ``host:port`` or several separated by commas.
        #: After a session ends or an attempt fails the client moves on to the next one,
        #: so a bot follows an arena whose gateways stop and start one at a time.
        problem = gateway_problem(server)
        if problem:
            raise ValueError(problem)
        self.servers = [part.strip() for part in server.split(",") if part.strip()]
        self._server_index = 0
        self.token = token
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self.max_attempts = max_attempts
        self.channel_options = channel_options or keepalive_channel_options()
        self.on_welcome = on_welcome
        #: TLS to the gateway (None: plain TCP).
        self.tls = tls
        #: What the hello says wrote it (``Hello.client``).
        self.client_name = f"thousand-bot-python/{__version__}"
        self.instance_id = ""
        self.decisions = 0
        self.sessions = 0
        #: The seats this bot decided for in each match still going, for the result line.
        self._seats: dict[str, set[int]] = {}
        self._unsent: list[bot_pb2.Decision] = []
        self._welcomed = False
        self._thinking: set[asyncio.Future[None]] = set()
        #: The current session's writer (None between sessions).
        self._writer: _Writer | None = None
        self._jitter = random.Random(os.urandom(16))
        #: The last event number seen per match (the most recent matches only): an event
        #: may come twice after the bot moves to another gateway, and is passed on once.
        self._seen: collections.OrderedDict[str, int] = collections.OrderedDict()
        #: The bot keeps Bot.on_request (it overrides decide or the per-kind methods):
        #: decide is called directly.
        self._plain = type(bot).on_request is Bot.on_request

    @property
    def server(self) -> str:
        """The gateway of the current (or next) session."""
        return self.servers[self._server_index]

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Play until ``stop`` is set; raises BotRejected when the server refuses the bot."""
        stop = stop or asyncio.Event()
        try:
            await self._run(stop)
        finally:
            await self._stop_thinking()

    async def _run(self, stop: asyncio.Event) -> None:
        failures = 0
        delay = self.backoff_initial
        while not stop.is_set():
            self._welcomed = False
            try:
                await self._session(stop)
                reason = "the server closed the stream"
            except grpc.aio.AioRpcError as exc:
                if exc.code() in PERMANENT_CODES:
                    raise BotRejected(exc.code(), exc.details() or "") from None
                reason = f"{exc.code().name}: {exc.details()}"
            except ConnectionResetError as exc:
                reason = str(exc)
            if stop.is_set():
                break
            welcomed = self._welcomed
            if len(self.servers) > 1:
                self._server_index = (self._server_index + 1) % len(self.servers)
            if welcomed:
                failures, delay = 0, self.backoff_initial
            else:
                failures += 1
                if self.max_attempts is not None and failures >= self.max_attempts:
                    raise ConnectionError(
                        f"could not reach {', '.join(self.servers)} after {failures} "
                        f"attempts: {reason}"
                    )
            wait = delay * (1 + 0.25 * self._jitter.random())
            log.warning("disconnected (%s); reconnecting to %s in %.1f s", reason, self.server,
                        wait)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), wait)
            if not welcomed:
                delay = min(delay * 2, self.backoff_max)

    async def _stop_thinking(self) -> None:
        """Cancel the answers an ``async`` bot is still thinking about.

        Between sessions they go on (an answer found meanwhile is sent after the
        reconnect), but once the client stops nobody would send them: left running they
        would outlive the client, and be destroyed still pending when the loop closes."""
        tasks = list(self._thinking)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _session(self, stop: asyncio.Event) -> None:
        """One stream, from hello to its end (or until ``stop`` is set)."""
        if self.tls is not None:
            opened = grpc.aio.secure_channel(self.server, self.tls.credentials(),
                                             options=self.channel_options)
        else:
            opened = grpc.aio.insecure_channel(self.server, options=self.channel_options)
        async with opened as ch:
            stub = bot_pb2_grpc.BotServiceStub(ch)
            call = stub.Play(metadata=(("authorization", f"Bearer {self.token}"),))
            # The stop signal cancels the whole stream once, rather than racing every read
            # against it: a read per decision is the hot path.
            reading = asyncio.ensure_future(self._converse(call))
            stopper = asyncio.ensure_future(stop.wait())
            try:
                await asyncio.wait({reading, stopper}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                stopper.cancel()
            if not reading.done():
                call.cancel()
                reading.cancel()
                with contextlib.suppress(asyncio.CancelledError, grpc.aio.AioRpcError):
                    await reading
                return
            reading.result()  # a stream error (AioRpcError) propagates to run()
            code = await call.code()
            if code in PERMANENT_CODES:
                raise BotRejected(code, await call.details() or "")
            if code != grpc.StatusCode.OK:
                raise ConnectionResetError(f"{code.name}: {await call.details()}")

    async def _converse(self, call: Any) -> None:
        await call.write(
            bot_pb2.PlayRequest(
                hello=bot_pb2.Hello(
                    name=self.bot.name,
                    version=self.bot.version,
                    max_concurrent_matches=self.bot.max_concurrent_matches,
                    client=self.client_name,
                    omit_events=not self.bot.wants_events(),
                )
            )
        )
        # Read with call.read() rather than ``async for``, which goes through an async
        # generator around the same call: one resumption less for every message.
        read = call.read
        writer = self._writer = _Writer(call, self._unsent)
        try:
            while True:
                message = await read()
                if message is grpc.aio.EOF:
                    break
                # Decision requests, the usual message, skip a coroutine of dispatch, and
                # a plain bot's answer is handed to the writer from here.
                if message.WhichOneof("message") == "decision_request":
                    request = message.decision_request
                    started = time.perf_counter()
                    action = self._decide(request, started)
                    if action is not None:
                        self._send(request, action, started)
                else:
                    self._handle(message)
        finally:
            writer.close()
            if self._writer is writer:
                self._writer = None

    def _handle(self, message: bot_pb2.PlayResponse) -> None:
        """Every message but a decision request (answered in :meth:`_converse`)."""
        kind = message.WhichOneof("message")
        if kind == "event":
            if self._repeat(message.event):
                return
            event = event_to_dict(message.event)
            if event.get("type") in ("match_start", "match_end"):
                self._tell_match(event)
            try:
                self.bot.on_event(event)
            except Exception:
                log.exception("on_event raised; the bot plays on")
        elif kind == "error":
            err = message.error
            code = bot_pb2.ErrorCode.Name(err.code)
            if err.code in (bot_pb2.ERROR_CODE_ILLEGAL_ACTION,
                            bot_pb2.ERROR_CODE_MALFORMED_ACTION):
                log.warning("strike on request %s (the referee plays its fallback): %s",
                            err.request_id, err.reason)
            elif err.code == bot_pb2.ERROR_CODE_UNKNOWN_REQUEST:
                log.warning("answer to %s not taken (too late: a timeout, which the referee "
                            "counts as a strike, or already answered): %s", err.request_id,
                            err.reason)
            else:
                log.warning("server refused %s: %s", err.request_id or "a message", err.reason)
            self.bot.on_error(err.request_id, code, err.reason)
        elif kind == "welcome":
            self.instance_id = message.welcome.instance_id
            self.sessions += 1
            log.info("connected to %s as %s", self.server, self.instance_id)
            if self.on_welcome is not None:
                self.on_welcome(message.welcome)
            unsent = list(self._unsent)
            self._unsent.clear()
            for decision in unsent:
                self._send_message(bot_pb2.PlayRequest(decision=decision))
            self._welcomed = True

    def _repeat(self, event: Any) -> bool:
        """Whether the bot has had this event already. A match's events come numbered in
        order; after a gateway takes the bot over (or its stream breaks) the events since
        its last answer may be sent again, and a match played again from its start (its
        worker was lost) starts over at 0."""
        seen = self._seen
        match_id = event.match_id
        last = seen.get(match_id)
        number = event.sequence
        if last is not None and number <= last and not (
            number == 0 and event.type == "match_start"
        ):
            return True
        seen[match_id] = number
        seen.move_to_end(match_id)
        if len(seen) > MATCHES_REMEMBERED:
            seen.popitem(last=False)
        return False
    def _tell_match(self, event: dict[str, Any]) -> None:
        """Log a match's start and its result for this bot's seats (INFO; a forfeit is a
        WARNING), so a bot's log says what it played even with no ``on_event`` of its own:
        the gateway sends these two events to every instance."""
        match_id = str(event.get("match_id", ""))
        if event["type"] == "match_start":
            rules = event.get("rules") or {}
            preset = rules.get("preset", "?") if isinstance(rules, dict) else "?"
            seats = event.get("seats") or event.get("bots") or []
            log.info("match %s started: %s, seats %s", match_id, preset,
                     ", ".join(str(b) for b in seats))
            return
        mine = sorted(self._seats.pop(match_id, ()))
        status = event.get("status", "?")
        scores = event.get("scores") or []
        ranks = event.get("ranks") or []
        strikes = event.get("strikes") or []
        parts = []
        for seat in mine:
            struck = _nth(strikes, seat, 0)
            parts.append(f"seat {seat}: rank {_nth(ranks, seat)} of {len(scores)}, "
                         f"{_nth(scores, seat)} points"
                         + (f", {struck} strike(s)" if struck else ""))
        told = "; ".join(parts) or f"scores {scores}"
        log.info("match %s ended (%s, %s deals): %s", match_id, status, event.get("deals", "?"),
                 told)
        forfeit = event.get("forfeit_seat")
        if forfeit is not None and forfeit in mine:
            log.warning("match %s: seat %s forfeited it after %s strikes", match_id, forfeit,
                        strikes[forfeit] if forfeit < len(strikes) else "too many")

    def _decide(self, msg: bot_pb2.DecisionRequest, started: float) -> str | None:
        """A plain bot's answer, to be sent at once; an ``async`` bot's answers run as
        tasks (None here), so one connection thinks about many matches at the same time."""
        legal = msg.legal_actions[:]
        try:
            result: Any
            if self._plain:
                # What Bot.on_request does, without the Request it would only unpack.
                result = self.bot.decide(observation_to_dict(msg.observation), legal)
            else:
                result = self.bot.on_request(
                    Request(
                        match_id=msg.match_id,
                        request_id=msg.request_id,
                        seat=msg.seat,
                        observation=observation_to_dict(msg.observation),
                        legal=legal,
                        deadline_ms=msg.deadline_ms,
                        time_bank_ms=msg.time_bank_ms,
                    )
                )
        except Exception as exc:
            result = self._raised(msg, exc)
        if type(result) is not str and inspect.isawaitable(result):
            task = asyncio.ensure_future(self._later(msg, started, result))
            self._thinking.add(task)
            task.add_done_callback(self._thinking.discard)
            return None
        return str(result)

    async def _later(self, msg: bot_pb2.DecisionRequest, started: float, result: Any) -> None:
        try:
            action = str(await result)
        except Exception as exc:
            action = self._raised(msg, exc)
        self._send(msg, action, started)

    @staticmethod
    def _raised(msg: bot_pb2.DecisionRequest, exc: Exception) -> str:
        """A bot that raised answers as it would anywhere else: the referee counts the
        answer malformed, plays its fallback action and gives the seat a strike, exactly as
        in ``arena match`` and ``arena bot-check``. The answer names the error, so the
        organiser's log and the strike say what happened; the traceback is logged here."""
        log.error("match %s: the bot raised %s on request %s; the referee plays its "
                  "fallback and counts a strike", msg.match_id, type(exc).__name__,
                  msg.request_id, exc_info=exc)
        return f"{RAISED_PREFIX}{type(exc).__name__}: {exc}"[:64]

    def _send(self, msg: bot_pb2.DecisionRequest, action: str, started: float) -> None:
        think_us = int((time.perf_counter() - started) * 1e6)
        # Filled in place: building a Decision and then a PlayRequest around it copies it.
        message = bot_pb2.PlayRequest()
        decision = message.decision
        decision.request_id = msg.request_id
        decision.action = action
        decision.think_time_us = think_us
        self.decisions += 1
        self._send_message(message)
        seats = self._seats.get(msg.match_id)
        if seats is None:
            if len(self._seats) >= _MATCHES_REMEMBERED:  # ends this instance never heard of
                del self._seats[next(iter(self._seats))]
            seats = self._seats[msg.match_id] = set()
        seats.add(msg.seat)
        think_ms = think_us / 1000.0
        if think_ms > msg.deadline_ms:
            self._slow(msg, think_ms)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("match %s seat %d: %r in %.2f ms (%d legal; deadline %d ms, bank %d ms)",
                      msg.match_id, msg.seat, action, think_ms, len(msg.legal_actions),
                      msg.deadline_ms, msg.time_bank_ms)

    @staticmethod
    def _slow(msg: bot_pb2.DecisionRequest, think_ms: float) -> None:
        """An answer over its deadline, as the bot measured it (the referee's clock, which
        leaves out the time the platform took, has the last word)."""
        over = think_ms - msg.deadline_ms
        if over > msg.time_bank_ms:
            log.warning("match %s seat %d: %.0f ms to answer, past the %d ms deadline and the "
                        "%d ms left in the time bank: a timeout (the referee plays its "
                        "fallback and counts a strike)", msg.match_id, msg.seat, think_ms,
                        msg.deadline_ms, msg.time_bank_ms)
        else:
            log.info("match %s seat %d: slow answer, %.0f ms for a %d ms deadline: %.0f ms "
                     "from the time bank, %.0f ms left", msg.match_id, msg.seat, think_ms,
                     msg.deadline_ms, over, msg.time_bank_ms - over)

    def _send_message(self, message: bot_pb2.PlayRequest) -> None:
        writer = self._writer
        if writer is not None:
            writer.send(message)
        else:  # between sessions (an async bot answering late): sent after the reconnect
            _keep_unsent(self._unsent, message)
