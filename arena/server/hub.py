"""Routing of decision requests and match events to connected bot instances.

One bot (one token) may run several instances, and one instance plays many matches at once
over its single stream. A match is bound to one instance of each of its bots at first
contact, so that instance sees the match's events and requests in order; a new match goes to
the least busy instance (round robin among equals). When an instance drops, the binding
moves to another instance at the next request, while requests already sent are left to the
referee's clock: an answer can still arrive from any instance of the same bot, e.g. after a
reconnect, and is accepted as long as the referee is still waiting for it.

Only the bot a request was sent to can answer it: a request id of another bot is treated
exactly like an id that never existed, so ids reveal nothing.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, TypeAlias

import grpc
from thousand_bot.proto.thousand.v1 import bot_pb2

from arena.engine import NotationError, parse_action
from arena.engine.game import Game
from arena.match.types import JSON, DecisionRequest
from arena.referee.clock import BotClock, PlatformError, new_future
from arena.server import convert, wire
from arena.server.limits import ACTION_MAX, StreamLimits, quote


class Outcome(Enum):
    OK = "ok"
    MALFORMED = "malformed"
    ILLEGAL = "illegal"


def classify_action(text: str, legal: tuple[str, ...]) -> tuple[Outcome, str, str]:
    """Judge an answer as the referee will: parsed by the engine's notation, so another
    spelling of a legal action (``PLAY 10h`` for ``play TH``) is that action. Returns the
    outcome, the text to hand to the referee and, when not ok, why. Text longer than any
    action is malformed without being parsed, and only its prefix reaches the referee: one
    character over the bound, so that the referee finds it malformed too."""
    if text in legal:
        return Outcome.OK, text, ""
    if len(text) > ACTION_MAX:
        return Outcome.MALFORMED, text[: ACTION_MAX + 1], f"longer than {ACTION_MAX} characters"
    try:
        normal = parse_action(text).text
    except NotationError as exc:
        return Outcome.MALFORMED, text, str(exc)
    if normal in legal:
        return Outcome.OK, normal, ""
    return Outcome.ILLEGAL, normal, ""


class Pending:
    """A decision request the referee is waiting on.

    It keeps the request as the bytes the bot will read, not the request itself: the
    observation inside (a few dozen lists and strings) is freed as soon as it is written
    out, instead of living, and being walked by the garbage collector, for as long as the
    bot thinks.

    A plain class rather than a dataclass: one is made for every decision, and mypyc
    compiles a hand-written ``__init__`` but leaves the one ``dataclasses`` generates
    interpreted.
    """

    __slots__ = ("bot", "clock", "connection", "future", "hub", "legal", "match_id",
                 "message", "request_id", "waiter")

    def __init__(
        self,
        hub: BotHub,
        bot: str,
        match_id: str,
        request_id: str,
        legal: Sequence[str],
        message: bytes,
        clock: BotClock | None,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        """The hub and the arguments of :meth:`BotHub.submit_message`, in its order; the
        answer's future is made on ``loop``, the one the referee waits on."""
        self.hub = hub
        self.bot = bot
        self.match_id = match_id
        self.request_id = request_id
        #: The legal actions as the referee listed them (a few dozen at most: looked
        #: through rather than hashed into a set for every request).
        self.legal = tuple(legal)
        self.message = message
        #: The bot's clock (a request submitted without one gets a clock of its own).
        self.clock = clock if clock is not None else BotClock()
        self.future: asyncio.Future[str] = new_future(loop)
        self.connection: Connection | None = None
        #: Waits for an instance to connect when none could take the request at once.
        self.waiter: asyncio.Task[None] | None = None

    def __call__(self, _future: Any) -> None:
        """The future's done callback, which forgets the request (timeouts, withdrawals;
        an answer forgets it at once instead): the request itself rather than a closure
        made for every request."""
        self.hub._settle(self)


class _Told:
    """What one bot was told of one match: the last event (by identity, or by its number in
    the match for a match played elsewhere) and the numbering of its event stream."""

    __slots__ = ("conn", "encoder", "event", "index", "skipping")

    def __init__(self) -> None:
        self.event: Mapping[str, Any] | None = None
        self.index = -1
        self.encoder: convert.EventEncoder | None = None
        #: The instance the last numbered event went to: on another instance the bot may
        #: lack what this one was told (see :meth:`BotHub.catch_up`).
        self.conn: Connection | None = None
        #: The instance holding the match when it wants no events: while it stays open,
        #: a seat counts the next plain event itself (:meth:`RemoteSeat.on_event_nowait`).
        self.skipping: Connection | None = None


class Outgoing:
    """A decision request on its way down a bot's stream, with the clock it starts.

    The bot's time starts when the stream takes the request, not when the referee asked:
    a request queued behind other messages (a busy gateway) costs the bot nothing.
    """

    __slots__ = ("clock", "message")

    def __init__(self, message: bytes, clock: BotClock) -> None:
        self.message = message
        self.clock = clock


_Item: TypeAlias = "bot_pb2.PlayResponse | Outgoing | None"


class Outbox:
    """What waits to be written to one bot's stream, in order, for its one writer.

    A deque and at most one waiter. ``asyncio.Queue`` does the same for any number of
    readers and writers, at a cost paid twice per decision here: a list of waiters, and a
    look-up of the running loop (a ``getpid`` system call) every time the writer finds it
    empty, which a stream that keeps up with its bot does on nearly every message.
    """

    __slots__ = ("_items", "_loop", "_waiter")

    def __init__(self) -> None:
        self._items: collections.deque[_Item] = collections.deque()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiter: asyncio.Future[None] | None = None

    def qsize(self) -> int:
        return len(self._items)

    def put_nowait(self, item: _Item) -> None:
        self._items.append(item)
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    async def get(self) -> _Item:
        """The oldest item, once there is one; a single reader at a time."""
        items = self._items
        while not items:
            loop = self._loop
            if loop is None:
                loop = self._loop = asyncio.get_running_loop()
            # A cancelled wait leaves a done future behind, which put_nowait skips.
            self._waiter = waiter = loop.create_future()
            await waiter
        return items.popleft()


@dataclass(eq=False)
class Connection:
    """One connected instance of a bot: its outgoing queue and what it is busy with.

    The outbox is bounded (``limits.outbox_messages``): the gateway never blocks a match on
    a bot that does not read, it cuts that bot's stream off instead. ``end`` is how any part
    of the gateway (the hub, the token check, the stream reader) ends the stream with a
    status; the ``Play`` handler waits for it.
    """

    bot: str
    instance_id: str
    version: str
    max_matches: int
    wants_events: bool = True
    limits: StreamLimits = field(default_factory=StreamLimits)
    outbox: Outbox = field(default_factory=Outbox)
    matches: set[str] = field(default_factory=set)
    pending: set[str] = field(default_factory=set)
    closed: bool = False
    #: Set once the stream is to end; ``end_code`` and ``end_reason`` say how.
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    end_code: grpc.StatusCode | None = None
    end_reason: str = ""
    #: A short label of why, for the ``arena_gateway_streams_cut_total`` metric.
    end_cause: str = ""
    #: When the write in progress began (0.0: none), to find a bot that stopped reading.
    writing_since: float = 0.0
    hub: BotHub | None = None
    _refusals: float = -1.0
    _refused_at: float = 0.0

    def has_room(self) -> bool:
        return self.max_matches <= 0 or len(self.matches) < self.max_matches

    def send(self, message: bot_pb2.PlayResponse | Outgoing) -> None:
        if self.closed:
            return
        if self.outbox.qsize() >= self.limits.outbox_messages:
            self.end(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"the bot does not read its stream: {self.limits.outbox_messages} messages "
                "were waiting to be sent to it",
                "unread",
            )
            return
        self.outbox.put_nowait(message)

    def end(self, code: grpc.StatusCode | None, reason: str = "", cause: str = "") -> None:
        """End the stream with ``code`` (None: a plain close); the first reason given wins.
        The instance leaves the hub at once, so no new work goes to it."""
        if self.end_code is None and not self.ended.is_set():
            self.end_code = code
            self.end_reason = reason
            self.end_cause = cause
        self.ended.set()
        if self.hub is not None and not self.closed:
            self.hub.disconnect(self)
        self.closed = True

    def refuse(self) -> bool:
        """Count one refused message against the stream's budget; False once the bot is
        over it (it floods), after ending the stream with RESOURCE_EXHAUSTED."""
        now = time.monotonic()
        limits = self.limits
        if self._refusals < 0:
            self._refusals = float(limits.refusal_burst)
        else:
            self._refusals = min(
                float(limits.refusal_burst),
                self._refusals + (now - self._refused_at) * limits.refusal_rate,
            )
        self._refused_at = now
        if self._refusals < 1.0:
            self.end(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"too many refused messages: more than {limits.refusal_burst} at once or "
                f"{limits.refusal_rate:g} a second (unknown request ids, empty messages)",
                "flood",
            )
            return False
        self._refusals -= 1.0
        return True


class BotHub:
    """All connected instances, all pending requests, and the match-to-instance bindings."""

    def __init__(self, limits: StreamLimits | None = None) -> None:
        self.limits = limits or StreamLimits()
        self._connections: dict[str, list[Connection]] = {}
        self._pending: dict[str, Pending] = {}
        self._bindings: dict[tuple[str, str], Connection] = {}
        #: What each (bot, match) was told so far; one lookup per event and listener.
        self._told: dict[tuple[str, str], _Told] = {}
        self._waiters: dict[str, asyncio.Event] = {}
        self._ids = itertools.count(1)
        self._round_robin = itertools.count()
        self._versions: dict[str, str] = {}
        #: Called with (bot, request id, outcome, the decision's clock, the bot's own
        #: think time in microseconds) for every answer that reached a waiting request;
        #: for statistics and benchmarks.
        self.on_answer: Callable[[str, str, Outcome, BotClock, int], None] | None = None
        #: Called with the platform delay (seconds) of every answered request: the load
        #: signal of admission control.
        self.on_delay: Callable[[float], None] | None = None
        #: Called with (bot, instances now connected) whenever an instance comes or goes, so
        #: that work tied to a bot being present (Redis routing) starts and stops with it.
        self.instance_listeners: list[Callable[[str, int], None]] = []
        #: Requests to hand back, by id, should the stream they went down end before
        #: their answer (see :meth:`on_loss`).
        self._on_loss: dict[str, Callable[[], None]] = {}

    # --- instances --------------------------------------------------------------------

    def connect(
        self, bot: str, version: str, max_matches: int, wants_events: bool = True
    ) -> Connection:
        conn = Connection(
            bot=bot,
            instance_id=f"{bot}#{next(self._ids)}",
            version=version,
            max_matches=max(0, max_matches),
            wants_events=wants_events,
            limits=self.limits,
        )
        conn.hub = self
        self._connections.setdefault(bot, []).append(conn)
        self._versions[bot] = version
        self._wake(bot)
        self._notify(bot)
        return conn

    def disconnect(self, conn: Connection) -> None:
        conn.closed = True
        conns = self._connections.get(conn.bot, [])
        removed = conn in conns
        if removed:
            conns.remove(conn)
        for key in [k for k, c in self._bindings.items() if c is conn]:
            del self._bindings[key]
        conn.matches.clear()
        for request_id in list(conn.pending):
            hand_back = self._on_loss.pop(request_id, None) if self._on_loss else None
            if hand_back is not None:
                hand_back()
                continue
            pending = self._pending.get(request_id)
            if pending is not None:
                # Requests it never got run on the bot's clock from now: the bot left.
                pending.clock.start()
        if removed:
            self._notify(conn.bot)

    def stream_blocked(self, conn: Connection) -> None:
        """The connection's stream is held up by the bot itself (it does not read): start
        the clocks of the questions waiting to be written to it."""
        for request_id in conn.pending:
            pending = self._pending.get(request_id)
            if pending is not None:
                pending.clock.start()

    def _notify(self, bot: str) -> None:
        count = self.instances(bot)
        for listener in list(self.instance_listeners):
            listener(bot, count)

    def kick(self, bot: str, reason: str) -> int:
        """End every session of a bot with UNAUTHENTICATED (its token was revoked or
        replaced); how many there were."""
        conns = list(self._connections.get(bot, []))
        for conn in conns:
            conn.end(grpc.StatusCode.UNAUTHENTICATED, reason, "revoked")
        return len(conns)

    def all_connections(self) -> list[Connection]:
        return [c for conns in self._connections.values() for c in conns]

    def shed(self, reason: str) -> int:
        """End every session with UNAVAILABLE: the gateway is stopping and its bots should
        reconnect to another gateway; how many sessions there were."""
        conns = self.all_connections()
        for conn in conns:
            # Questions in flight were the platform's to lose: the referee asks them again,
            # through another gateway, instead of timing the bot out.
            for request_id in list(conn.pending):
                pending = self._pending.get(request_id)
                if pending is not None and not pending.future.done():
                    pending.future.set_exception(PlatformError(reason))
            conn.end(grpc.StatusCode.UNAVAILABLE, reason, "shed")
        return len(conns)

    def instances(self, bot: str) -> int:
        return len(self._connections.get(bot, []))

    def connected_bots(self) -> list[str]:
        """Bots with at least one instance connected now."""
        return sorted(bot for bot, conns in self._connections.items() if conns)

    def pending_count(self, bot: str) -> int:
        return sum(1 for p in self._pending.values() if p.bot == bot)

    def waiting(self, bot: str, request_id: str) -> bool:
        """Whether ``request_id`` of ``bot`` still waits for its answer."""
        pending = self._pending.get(request_id)
        return pending is not None and pending.bot == bot and not pending.future.done()

    def version(self, bot: str) -> str:
        return self._versions.get(bot, "")

    def _wake(self, bot: str) -> None:
        event = self._waiters.pop(bot, None)
        if event is not None:
            event.set()

    def _pick(self, bot: str, match_id: str) -> Connection | None:
        """The instance holding this match, or the least busy one with room for it."""
        bound = self._bindings.get((bot, match_id))
        if bound is not None and not bound.closed:
            return bound
        candidates = [c for c in self._connections.get(bot, []) if c.has_room() and not c.closed]
        if not candidates:
            return None
        start = next(self._round_robin) % len(candidates)
        rotated = candidates[start:] + candidates[:start]
        conn = min(rotated, key=lambda c: (len(c.pending), len(c.matches)))
        self._bindings[(bot, match_id)] = conn
        conn.matches.add(match_id)
        return conn

    async def _instance_for(self, bot: str, match_id: str) -> Connection:
        while True:
            conn = self._pick(bot, match_id)
            if conn is not None:
                return conn
            event = self._waiters.setdefault(bot, asyncio.Event())
            await event.wait()

    def release_match(self, match_id: str) -> None:
        """Forget a finished match, freeing its place on the instances that held it."""
        for key in [k for k in self._bindings if k[1] == match_id]:
            conn = self._bindings.pop(key)
            conn.matches.discard(match_id)
            self._wake(conn.bot)
        for key in [k for k in self._told if k[1] == match_id]:
            del self._told[key]

    def forget(
        self, bot: str, match_id: str, *, if_last: Mapping[str, Any] | None = None
    ) -> None:
        """Forget one bot's state for a match played elsewhere (a worker reached through
        Redis), which has no ``release_match`` call at its end. With ``if_last``, only when
        that is still the last event sent for it: the same match id may have started again."""
        key = (bot, match_id)
        told = self._told.get(key)
        if if_last is not None and (told is None or told.event is not if_last):
            return
        self._told.pop(key, None)
        conn = self._bindings.pop(key, None)
        if conn is not None:
            conn.matches.discard(match_id)
            self._wake(bot)

    # --- decisions --------------------------------------------------------------------

    def submit(
        self,
        bot: str,
        request: DecisionRequest,
        clock: BotClock | None = None,
        observations: wire.ObservationEncoder | None = None,
    ) -> asyncio.Future[str]:
        """Send a request to an instance of ``bot``; the future gets the answer text.

        The caller owns the clock: it cancels the future when time is up. ``clock`` is
        started when the request is written to the bot's stream (or at once when no
        instance of the bot is connected: waiting for an absent bot is the bot's time) and
        stopped when the answer is read. Without a connected instance the request waits
        for one to connect. ``observations`` is the seat's own encoder (see
        :class:`~arena.server.wire.ObservationEncoder`).
        """
        return self.submit_message(
            bot,
            request.match_id,
            request.request_id,
            request.legal,
            wire.decision_request_bytes(request, observations),
            clock,
        )

    def submit_message(
        self,
        bot: str,
        match_id: str,
        request_id: str,
        legal: Sequence[str],
        message: bytes,
        clock: BotClock | None = None,
    ) -> asyncio.Future[str]:
        """:meth:`submit` for a request already serialised (``message``: the
        ``PlayResponse`` bytes, see :mod:`arena.server.wire`)."""
        if request_id in self._pending:
            raise ValueError(f"request id {request_id!r} is already pending")
        # The clock's loop is the running one; asking asyncio costs a getpid() system call.
        stalls = clock.stalls if clock is not None else None
        loop = stalls.loop if stalls is not None else asyncio.get_running_loop()
        pending = Pending(self, bot, match_id, request_id, legal, message, clock, loop)
        self._pending[request_id] = pending
        pending.future.add_done_callback(pending)
        conn = self._pick(bot, match_id)
        if conn is None:
            pending.clock.start()
            pending.waiter = loop.create_task(self._deliver_later(pending))
        else:
            self._deliver(pending, conn)
        return pending.future

    async def decide(
        self, bot: str, request: DecisionRequest, clock: BotClock | None = None
    ) -> str:
        """:meth:`submit` and wait; cancelling the caller withdraws the request."""
        return await self.submit(bot, request, clock)

    def _deliver(self, pending: Pending, conn: Connection) -> None:
        pending.connection = conn
        conn.pending.add(pending.request_id)
        conn.send(Outgoing(pending.message, pending.clock))

    async def _deliver_later(self, pending: Pending) -> None:
        conn = await self._instance_for(pending.bot, pending.match_id)
        if not pending.future.done():
            self._deliver(pending, conn)

    def on_loss(self, request_id: str, hand_back: Callable[[], None]) -> None:
        """Call ``hand_back`` (instead of letting the bot's clock run on) if the stream the
        request went down ends before its answer: for a request from a match played
        elsewhere, which can ask again wherever the bot reconnects. Forgotten when the
        request is settled."""
        self._on_loss[request_id] = hand_back

    def _settle(self, pending: Pending) -> None:
        """The request is answered, timed out or withdrawn: forget it."""
        request_id = pending.request_id
        if self._on_loss:
            self._on_loss.pop(request_id, None)
        # The future's callback (the request itself) is gone once it ran or was removed,
        # so the request and its future are freed as soon as the referee is done, instead
        # of piling up for the garbage collector's full passes (one cycle per decision).
        if self._pending.get(request_id) is pending:
            del self._pending[request_id]
        if pending.connection is not None:
            pending.connection.pending.discard(request_id)
        if pending.waiter is not None and not pending.waiter.done():
            pending.waiter.cancel()

    def answer(self, conn: Connection, decision: bot_pb2.Decision) -> bot_pb2.Error | None:
        """Deliver a bot's decision to the waiting referee, judging it on the way; the
        error to send back to the bot, if any."""
        pending = self._pending.get(decision.request_id)
        if pending is None or pending.bot != conn.bot or pending.future.done():
            return bot_pb2.Error(
                request_id=decision.request_id,
                code=bot_pb2.ERROR_CODE_UNKNOWN_REQUEST,
                reason=f"request {quote(decision.request_id)} is not waiting for an answer from "
                "this bot: it was never sent to it, was already answered, or its time ran out",
            )
        now = time.perf_counter()
        clock = pending.clock
        clock.stop(now)
        outcome, text, why = classify_action(decision.action, pending.legal)
        # Forgotten here rather than one loop turn later (a pending request still waiting
        # for its answer is always its future's callback).
        pending.future.remove_done_callback(pending)
        pending.future.set_result(text)
        self._settle(pending)
        if self.on_delay is not None:
            self.on_delay(clock.platform_s())
        if self.on_answer is not None:
            self.on_answer(conn.bot, decision.request_id, outcome, clock, decision.think_time_us)
        if outcome is Outcome.MALFORMED:
            return bot_pb2.Error(
                request_id=decision.request_id,
                code=bot_pb2.ERROR_CODE_MALFORMED_ACTION,
                reason=f"{quote(decision.action)} is not an action in the game's notation ({why}; "
                "e.g. 'pass', 'bid 105', 'play QS'); the referee plays its fallback action",
            )
        if outcome is Outcome.ILLEGAL:
            shown = ", ".join(sorted(pending.legal)[:12])
            more = "" if len(pending.legal) <= 12 else ", ..."
            return bot_pb2.Error(
                request_id=decision.request_id,
                code=bot_pb2.ERROR_CODE_ILLEGAL_ACTION,
                reason=f"{quote(decision.action)} is not legal here (legal: {shown}{more}); "
                "the referee plays its fallback action",
            )
        return None

    # --- events -----------------------------------------------------------------------

    def event(
        self, bot: str, match_id: str, event: Mapping[str, Any], index: int | None = None
    ) -> None:
        """Forward a public event to the instance holding the match for this bot.

        A bot sitting in several seats of one match is told once per event. In a match run
        here every seat is handed the very same event object, so a repeat is recognised by
        identity; two different events may well be equal (the declarer's two ``discard ??``)
        and both are told. A match played elsewhere sends one copy per seat through Redis,
        each numbered by its ``index`` in the match: a copy whose number was already told
        is a repeat.
        """
        key = (bot, match_id)
        told = self._told.get(key)
        if told is None:
            told = self._told[key] = _Told()
        if index is not None:
            last = told.index
            restart = index == 0 and last > 0 and event.get("type") == "match_start"
            if index <= last and not restart:  # a match id played again starts over
                return
            told.index = index
        elif told.event is event:
            return
        told.event = event
        encoder = told.encoder
        if encoder is None:
            encoder = told.encoder = convert.EventEncoder()
        if index is not None:
            # The match's own number: the same whichever gateway delivers the event.
            encoder.sequence = index
        kind = event.get("type")
        # Every event of every match comes here once per seat, and most bots want none:
        # the bound instance is looked up inline, and a skip is counted without a call.
        conn = self._bindings.get(key)
        if conn is None or conn.closed:
            conn = self._pick(bot, match_id)
        if conn is None or (not conn.wants_events and kind not in _ALWAYS_TOLD):
            # Counted all the same, so that the numbering is the same for every listener.
            if kind == "deal_start":
                encoder.skip(event)
            else:
                encoder.sequence += 1
            told.skipping = conn if index is None else None
        else:
            told.skipping = None
            conn.send(bot_pb2.PlayResponse(event=encoder.encode(match_id, event)))
        if index is not None:
            told.conn = conn
        if kind == "match_end":
            told.skipping = None
            binding = self._bindings.pop(key, None)
            if binding is not None:
                binding.matches.discard(match_id)
                self._wake(bot)
            # The last event stays so that a second seat of the same bot is not told the
            # end twice; release_match forgets it.
            told.encoder = None


    def in_order(self, bot: str, match_id: str, index: int, event: Mapping[str, Any]) -> bool:
        """Whether a numbered event of a match played elsewhere follows, without a gap,
        what the instance holding the match here was told: the next number on the same
        instance, or the start of a match. An event after a gap (this gateway took the bot
        over mid-match, or the match moved to another instance) is not sent on its own:
        the next question of the match carries every event the bot may lack, in order
        (:meth:`catch_up`)."""
        if index == 0 and event.get("type") == "match_start":
            return True
        told = self._told.get((bot, match_id))
        if told is None or index <= told.index:
            return told is not None  # a repeat: the hub skips it
        conn = self._bindings.get((bot, match_id))
        return index == told.index + 1 and told.conn is conn and conn is not None \
            and not conn.closed

    def catch_up(self, bot: str, match_id: str, events: Sequence[tuple[int, Mapping[str, Any]]],
                 ) -> None:
        """Tell the bot, before a question of a match played elsewhere, the events of the
        match it may lack: ``events`` are those since its last answer, numbered. Those
        already told to the instance that holds the match are skipped; on another instance
        (or a fresh gateway) all are told again, and the bot skips the numbers it has."""
        if not events:
            return
        key = (bot, match_id)
        told = self._told.get(key)
        conn = self._pick(bot, match_id)
        if told is None or told.conn is not conn or conn is None:
            if told is None:
                told = self._told[key] = _Told()
            told.index = events[0][0] - 1
        for index, event in events:
            self.event(bot, match_id, event, index=index)


#: Events the hub itself must see even for a bot that wants none.
_NOTED_EVENTS = frozenset({"deal_start", "match_end"})
#: Events sent even to an instance that asked for none (``omit_events``): two a match, so
#: that a client can say which matches it plays and how each ended.
_ALWAYS_TOLD = frozenset({"match_start", "match_end"})


class RemoteSeat:
    """A seat played by a bot connected to this gateway (the referee's ``Seat`` protocol).

    It keeps a fair clock (``decide_clocked``): the referee charges the bot from the moment
    its request is written to its stream, see :mod:`arena.referee.clock`.
    """

    def __init__(self, hub: BotHub, bot: str) -> None:
        self.hub = hub
        self.bot = bot
        self.name = bot
        #: This seat's observations, written again only where they changed: from the
        #: request's observation, or straight from the game (submit_game).
        self.observations = wire.ObservationEncoder()
        self.views = wire.GameObservationEncoder()
        #: The hub's record of what this bot was told of the match (see on_event_nowait).
        self._told: tuple[str, _Told] | None = None

    async def decide(self, request: DecisionRequest) -> str:
        return await self.hub.decide(self.bot, request)

    async def decide_clocked(self, request: DecisionRequest, clock: BotClock) -> str:
        return await self.hub.decide(self.bot, request, clock)

    def submit_clocked(self, request: DecisionRequest, clock: BotClock) -> asyncio.Future[str]:
        """The request on its way, as a future (no coroutine per decision)."""
        return self.hub.submit(self.bot, request, clock, self.observations)

    def submit_game(
        self,
        game: Game,
        seat: int,
        match_id: str,
        request_id: str,
        legal: tuple[str, ...],
        deadline_ms: int,
        time_bank_ms: int,
        clock: BotClock,
    ) -> asyncio.Future[str]:
        """:meth:`submit_clocked` for the referee's request as its parts, the observation
        written straight from the game (:class:`~arena.server.wire.GameObservationEncoder`),
        without the observation dictionary that a :class:`DecisionRequest` carries."""
        message = wire.game_request_bytes(
            match_id, request_id, seat, game, legal, deadline_ms, time_bank_ms, self.views
        )
        return self.hub.submit_message(self.bot, match_id, request_id, legal, message, clock)

    async def on_event(self, match_id: str, event: JSON) -> None:
        self.hub.event(self.bot, match_id, event)

    def on_event_nowait(self, match_id: str, event: JSON) -> None:
        """Events only go onto the bot's outgoing queue: the referee need not wait.

        Every seat is told every event, and most bots want none: while the instance that
        holds the match wants none and stays connected, a plain event (not a deal's start,
        whose number the encoder notes, nor the match's end) is only counted, here,
        without a call into the hub. Anything else takes :meth:`BotHub.event`.
        """
        told = self._told
        if told is not None and told[0] is match_id:
            record = told[1]
            conn = record.skipping
            if (
                conn is not None
                and not conn.closed
                and record.event is not event
                and event["type"] not in _NOTED_EVENTS
                and record.encoder is not None
            ):
                record.event = event
                record.encoder.sequence += 1
                return
        self.hub.event(self.bot, match_id, event)
        if told is None or told[0] is not match_id:
            found = self.hub._told.get((self.bot, match_id))
            self._told = None if found is None else (match_id, found)


#: A write to a bot's stream that has not finished after this long waits for the bot to
#: read (HTTP/2 flow control): from then on its queued questions run on the bot's clock.
WRITE_BLOCKED_S = 0.2


def check_writes(hub: BotHub, conns: Iterable[Connection], now: float) -> None:
    """Look at the write in progress of each connection (``now``: ``time.monotonic()``).

    One that has not moved for ``WRITE_BLOCKED_S`` is held up by the bot, which does not
    read: the questions queued behind it wait for the bot, not for the platform, and their
    clocks start. One stuck for the hub's ``stall_s`` ends its stream. Every transport of a
    bot's messages (a gRPC stream, a bot program's pipe) is looked at this way."""
    stall_s = hub.limits.stall_s
    for conn in conns:
        since = conn.writing_since
        if since and now - since > WRITE_BLOCKED_S:
            hub.stream_blocked(conn)
        if since and now - since > stall_s:
            conn.end(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"the bot has not read its stream for {stall_s:g} s; the stream is closed",
                "stalled",
            )
