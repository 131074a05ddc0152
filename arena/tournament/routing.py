"""Decision routing over Redis between matches in workers and bots connected to gateways.

A match running in a Celery worker cannot call a bot that holds a gRPC stream to some
gateway process.  Redis lists join the two:

* ``arena:bot:{NAME}:requests`` - one list per bot.  The worker's :class:`RedisRemoteSeat`
  pushes decision requests and public match events onto it; every gateway that has NAME
  connected runs :func:`pump_redis_requests`, which pops them and hands them to its own
  seat for that bot (the gateway's ``RemoteSeat``).
* ``arena:reply:{ID}`` - one list per request.  The gateway pushes the answer there; the
  worker waits on it with ``BLPOP`` whose timeout is the decision's deadline plus the time
  bank, so no polling and no subscription survives the request.

The referee in the worker keeps the clock: if no answer comes in time it plays the
fallback action, exactly as for a bot connected to its own gateway.  Requests that sat in
the list past their deadline (no gateway had the bot) are dropped by the pump rather than
sent to a bot that can no longer answer in time.  Reply lists expire by themselves.

Message format (JSON, one per list element)::

    {"kind": "decide", "reply_to": "arena:reply:...", "request_id": "...", "match_id": "...",
     "seat": 0, "observation": {...}, "legal": ["pass", "bid 105"], "deadline_ms": 1000,
     "time_bank_ms": 10000, "expires_at": 1700000000.5,
     "events": [{"n": 41, "event": {...}}, ...]}
    {"kind": "event", "match_id": "...", "n": 0, "event": {"type": "deal_start", ...}}
    {"started": true}  when the bot has not answered within half its time, then
    reply: {"action": "bid 105", "bot_ms": 3.2, "platform_ms": 0.4}
           {"timeout": true, "bot_ms": 1000.0, "platform_ms": 0.4}
           {"error": "why no action"}
           {"lost": true, "bot_ms": 410.0}  the stream carrying it ended: ask again

``bot_ms`` is the bot's own time as the gateway measured it, from writing the request to
the bot's stream to reading the answer; the referee charges the bot that, never the time
the request spent in Redis or queued in a gateway (``platform_ms``).

``events`` in a decision are the match's events since the bot's last answer, which it must
have before it is asked: a gateway that did not tell it some of them (it took the bot over
mid-match, its stream broke) tells them first. Events are at least once: a bot skips a
number it has seen (the SDK does). A gateway serving a bot also marks it *served*
(``served_key``) for a minute after its last lease renewal, so that a match can tell a bot
whose gateway was lost or cut off (ask again later) from a bot that is not connected.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from arena.match.types import JSON, DecisionRequest, Seat, SeatResolver
from arena.referee.clock import BotClock, PlatformError

log = logging.getLogger(__name__)

KEY_PREFIX = "arena"
REPLY_TTL_S = 60
#: How long past its deadline a queued request is still worth sending to a bot.
STALE_GRACE_S = 2.0
#: Extra time the worker waits beyond the deadline and bank: the referee's own clock
#: decides timeouts, this only bounds the wait if the referee does not cancel.
WAIT_MARGIN_S = 1.0
#: How long past the bot's budget a worker waits for the answer once a gateway said it
#: wrote the request to the bot: the gateway answers when the bot's time is up, so this
#: only bounds a gateway that died mid-decision (its clock may run a little over the
#: budget, by the time its loop was stalled).
PLATFORM_MARGIN_S = 10.0
#: How long after its last renewal a gateway's mark that it serves a bot stands
#: (``served_key``): a bot whose gateway was cut off or lost takes this long at most to
#: notice (its keepalive) and connect to another, and its questions are asked again
#: meanwhile rather than counted as its timeouts.
SERVED_S = 60.0
#: Most events kept per match since a bot's last answer (a full deal is about 40).
MAX_TAIL = 1000
#: Most times one question is handed back (its bot's stream ended) and asked again.
MAX_HAND_BACKS = 20
#: How long events wait for a question of the same seat to go out with, before they go
#: out on their own (a bot that is not asked for a while still hears them this soon).
FLUSH_AFTER_S = 0.05
#: How long a match's end waits for its last events to reach Redis.
CLOSE_FLUSH_S = 5.0


def requests_key(bot: str) -> str:
    return f"{KEY_PREFIX}:bot:{bot}:requests"


def safe_redis_url(url: str) -> str:
    """The URL without its password, fit for a message."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))


def gateway_key(gateway_id: str) -> str:
    """Present while the gateway with this id is up (it renews the key's expiry)."""
    return f"{KEY_PREFIX}:gateway:{gateway_id}"


def lease_key(bot: str) -> str:
    """Which gateway serves the bot now (its id, with an expiry the gateway renews)."""
    return f"{KEY_PREFIX}:bot:{bot}:gateway"


def served_key(bot: str) -> str:
    """Which gateway served the bot lately (its id, expiring ``SERVED_S`` after the last
    renewal of its lease): the bot is connected somewhere, even if no gateway can take its
    lease now."""
    return f"{KEY_PREFIX}:bot:{bot}:served"


def reply_key(token: str) -> str:
    return f"{KEY_PREFIX}:reply:{token}"


class RemoteBotError(RuntimeError):
    """The gateway answered the request with an error instead of an action."""


class RemoteTimeout(TimeoutError):
    """No gateway answered within the decision's deadline and time bank."""


class RedisRemoteSeat:
    """A seat whose bot is connected to some gateway reachable through Redis.

    One asyncio Redis client per event loop: the referee runs each match in its own loop,
    and a client must not outlive the loop it was made in, so the client is closed when the
    match ends (``aclose``) and made again if the seat is used in a new loop.

    Events cost the match no wait: they are queued here and pushed in one command per
    batch, the batch a decision finds waiting going out with the decision itself, so a
    match pays one round trip to Redis per decision whatever the distance to Redis.
    Each decision also carries the events of its match since the bot's last answer (the
    *tail*): a gateway that took the bot over mid-match, or whose stream to the bot broke,
    may not have told it those, and tells them before the question (see
    ``RedisRouting`` on the gateway's side); the bot's answer confirms them.
    """

    def __init__(self, redis_url: str, bot: str, *, forward_events: bool = True) -> None:
        self.redis_url = redis_url
        self.bot = bot
        self.name = bot
        self.forward_events = forward_events
        self._client: aioredis.Redis[bytes] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock: asyncio.Lock | None = None
        self._sequences: dict[str, int] = {}
        self._backlog: list[str] = []
        self._backlog_warned = False
        self._flusher: asyncio.Task[None] | None = None
        #: Per match, the events since the bot's last answer (``{"n", "event"}``).
        self._unconfirmed: dict[str, list[JSON]] = {}

    def _redis(self) -> aioredis.Redis[bytes]:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            # No socket read timeout: a BLPOP may rightly wait longer than redis-py's default
            # 5 s (deadline plus time bank), and its own timeout bounds the wait.
            self._client = aioredis.Redis.from_url(self.redis_url, socket_timeout=None)
            self._loop = loop
            self._lock = asyncio.Lock()
        return self._client

    def _push_lock(self) -> asyncio.Lock:
        self._redis()
        assert self._lock is not None
        return self._lock

    async def decide(self, request: DecisionRequest) -> str:
        return await self.decide_clocked(request, BotClock())

    async def decide_clocked(self, request: DecisionRequest, clock: BotClock) -> str:
        """Ask through Redis; the gateway that holds the bot's stream keeps the bot's clock
        and reports it with the answer, so the time in Redis and in the gateway is the
        platform's, not the bot's.

        A Redis that cannot be reached, or a gateway that holds the bot's lease (or held it
        lately) but does not take the request (it died, or is cut off), is the platform's
        failure (:class:`PlatformError`: asked again, no strike); a bot that no gateway
        serves has simply not answered.
        """
        try:
            return await self._ask(request, clock)
        except TimeoutError:  # the bot's (an OSError, but not the network's)
            raise
        except (RedisError, OSError) as exc:
            raise PlatformError(
                f"Redis at {safe_redis_url(self.redis_url)} is unreachable "
                f"({type(exc).__name__}: {exc})"
            ) from None

    async def _ask(self, request: DecisionRequest, clock: BotClock) -> str:
        """Ask until a gateway answers. A question handed back (the bot's stream ended
        while it had it) is asked again at once, with what is left of the bot's time: the
        time it had the question and the time until a gateway writes it again (the bot
        reconnecting) are the bot's."""
        budget_s = (request.deadline_ms + max(0, request.time_bank_ms)) / 1000.0
        charged_s = 0.0
        handed_back_at: float | None = None
        for _ in range(MAX_HAND_BACKS + 1):
            left_s = budget_s - charged_s
            if left_s <= 0:
                break
            reply, started_at = await self._attempt(request, charged_s, left_s)
            if handed_back_at is not None:
                charged_s += max(0.0, started_at - handed_back_at)
            if reply.get("lost"):
                charged_s += float(reply.get("bot_ms", 0.0)) / 1000.0
                handed_back_at = time.perf_counter()
                continue
            if "bot_ms" in reply:
                bot_s = charged_s + float(reply["bot_ms"]) / 1000.0
                total = time.perf_counter() - clock.created
                clock.report(bot_s, max(0.0, total - bot_s))
            if "action" in reply:
                # The bot answered on the stream that carried the tail: it has every
                # event before this question.
                self._unconfirmed.pop(request.match_id, None)
                return str(reply["action"])
            if reply.get("timeout"):
                raise RemoteTimeout(f"bot '{self.bot}' did not answer within {budget_s:.1f}s")
            raise RemoteBotError(str(reply.get("error", "no action in reply")))
        clock.report(max(charged_s, budget_s), 0.0)
        raise RemoteTimeout(f"bot '{self.bot}' lost its question and did not answer within "
                            f"{budget_s:.1f}s")

    async def _attempt(self, request: DecisionRequest, charged_s: float, left_s: float,
                       ) -> tuple[JSON, float]:
        """Push the question once and wait for its reply; the reply, and about when the
        gateway wrote the question to the bot (as it said, or as the reply tells)."""
        client = self._redis()
        token = uuid.uuid4().hex
        charged_ms = int(charged_s * 1000)
        deadline_ms = max(0, request.deadline_ms - charged_ms)
        bank_ms = max(0, request.time_bank_ms - max(0, charged_ms - request.deadline_ms))
        message = {
            "kind": "decide",
            "reply_to": reply_key(token),
            "request_id": request.request_id,
            "match_id": request.match_id,
            "seat": request.seat,
            "observation": request.observation,
            "legal": list(request.legal),
            "deadline_ms": deadline_ms,
            "time_bank_ms": bank_ms,
            "budget_ms": int(left_s * 1000),
            "expires_at": time.time() + left_s,
            "events": list(self._unconfirmed.get(request.match_id, ())),
        }
        # First the gateway says it has written the request to the bot's stream (the bot's
        # time starts there); no gateway takes a request later than STALE_GRACE_S past its
        # expiry, so silence until then means no gateway had the bot: the bot's timeout.
        # The bot hears what happened before it is asked: the events waiting here go out
        # in the same command, and the wait for the answer in the same round trip.
        async with self._push_lock():
            sent = len(self._backlog)
            items = [*self._backlog, json.dumps(message, separators=(",", ":"))]
            async with client.pipeline(transaction=False) as pipe:
                pipe.rpush(requests_key(self.bot), *items)
                pipe.blpop([reply_key(token)], timeout=left_s + STALE_GRACE_S + WAIT_MARGIN_S)
                _, item = await pipe.execute()
            del self._backlog[:sent]
        if item is None:
            holder = await client.get(lease_key(self.bot))
            if holder is not None:
                raise PlatformError(
                    f"gateway {holder.decode(errors='replace')} serves bot '{self.bot}' but "
                    "did not take its request"
                )
            served = await client.get(served_key(self.bot))
            if served is not None:
                raise PlatformError(
                    f"bot '{self.bot}' was connected to gateway "
                    f"{served.decode(errors='replace')} lately, which does not answer now "
                    "(lost or cut off); its bot will connect to another"
                )
            raise RemoteTimeout(f"no gateway answered for bot '{self.bot}' in {left_s:.1f}s")
        reply: JSON = json.loads(item[1])
        if not reply.get("started"):
            # A quick answer comes alone: the bot's time began its own length ago.
            bot_s = float(reply.get("bot_ms", 0.0)) / 1000.0
            return reply, time.perf_counter() - bot_s
        started_at = time.perf_counter()
        # The gateway keeps the bot's clock and always answers when it runs out; this
        # wait only bounds a gateway that died meanwhile.
        item = await client.blpop([reply_key(token)], timeout=left_s + PLATFORM_MARGIN_S)
        if item is None:
            raise PlatformError(
                f"the gateway serving bot '{self.bot}' went silent after sending it a request"
            )
        return json.loads(item[1]), started_at

    def on_event_nowait(self, match_id: str, event: JSON) -> None:
        """The referee's plain call for each event: queued, never waited for."""
        # Numbered here, at the source: whichever gateway delivers an event (a gateway may
        # take over a bot mid-match) gives it the same sequence number, and a bot seated
        # twice, whose seats both forward every event, is told each number once.
        sequence = self._sequences.get(match_id, 0)
        self._sequences[match_id] = sequence + 1
        if self.forward_events:
            self.queue_event(match_id, event, sequence)
        if event.get("type") == "match_end":
            self._sequences.pop(match_id, None)
            self._unconfirmed.pop(match_id, None)

    async def on_event(self, match_id: str, event: JSON) -> None:
        self.on_event_nowait(match_id, event)

    async def send_event(self, match_id: str, event: JSON, sequence: int) -> None:
        """Put one numbered event on the bot's list (soon, in order; see the class)."""
        self.queue_event(match_id, event, sequence)

    def queue_event(self, match_id: str, event: JSON, sequence: int) -> None:
        message = {"kind": "event", "match_id": match_id, "n": sequence, "event": event}
        self._backlog.append(json.dumps(message, separators=(",", ":")))
        if event.get("type") != "match_end":
            tail = self._unconfirmed.setdefault(match_id, [])
            tail.append({"n": sequence, "event": event})
            if len(tail) > MAX_TAIL:
                del tail[: len(tail) - MAX_TAIL]
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.get_running_loop().create_task(self._flush_quietly())

    async def _flush_quietly(self) -> None:
        """Push the queued events after ``FLUSH_AFTER_S``, unless a question took them
        first: pushed now, they would hold that question back for their round trip to
        Redis. While Redis cannot be reached they wait here, in order, and go out before
        anything else once it is back."""
        await asyncio.sleep(FLUSH_AFTER_S)
        try:
            await self._flush()
        except (RedisError, OSError) as exc:
            if not self._backlog_warned:
                self._backlog_warned = True
                log.warning("events for bot %s wait for Redis: %s", self.bot, exc)

    async def _flush(self) -> None:
        async with self._push_lock():
            while self._backlog:
                sent = len(self._backlog)
                await self._redis().rpush(requests_key(self.bot), *self._backlog[:sent])
                del self._backlog[:sent]
        self._backlog_warned = False

    async def aclose(self) -> None:
        """At the match's end: the last events go out (within a few seconds), then the
        connection closes."""
        if self._client is not None and self._backlog:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._flush(), CLOSE_FLUSH_S)
            if self._backlog:
                log.warning("bot %s misses the last %d events: Redis is away",
                            self.bot, len(self._backlog))
                self._backlog.clear()
        flusher, self._flusher = self._flusher, None
        if flusher is not None and not flusher.done():
            flusher.cancel()
            with contextlib.suppress(BaseException):
                await flusher
        client, self._client, self._loop = self._client, None, None
        if client is not None:
            with contextlib.suppress(Exception):
                await client.aclose()  # type: ignore[attr-defined]  # stubs predate aclose


def routing_resolver(redis_url: str) -> SeatResolver:
    """A resolver for the referee: ``remote:NAME`` seats reached through Redis at ``redis_url``."""

    def resolve(ref: str) -> Seat:
        return remote_seat(ref, redis_url)

    return resolve


def is_remote(ref: str) -> bool:
    return ref.startswith("remote:")


def remote_seat(ref: str, redis_url: str) -> RedisRemoteSeat:
    """The seat for a ``remote:NAME`` bot reference."""
    if not is_remote(ref):
        raise ValueError(f"not a remote bot reference: {ref!r}")
    return RedisRemoteSeat(redis_url, ref[len("remote:") :])


# ---------------------------------------------------------------------------------------
# Gateway side


async def pump_redis_requests(
    redis_url: str,
    bot_name: str,
    dispatch: Seat,
    *,
    stop: asyncio.Event | None = None,
    poll_s: float = 1.0,
) -> None:
    """Serve the Redis request list of ``bot_name`` with ``dispatch`` until cancelled.

    The gateway runs one pump per bot that has at least one instance connected, and
    cancels it (or sets ``stop``) when the last instance leaves; ``dispatch`` is the
    gateway's seat for that bot (``RemoteSeat(hub, bot_name)``).  Events are delivered in
    order as they are popped; decisions are answered concurrently, so one slow match does
    not hold up the others.
    """
    client = aioredis.Redis.from_url(redis_url)
    key = requests_key(bot_name)
    tasks: set[asyncio.Task[None]] = set()
    try:
        while stop is None or not stop.is_set():
            item = await client.blpop([key], timeout=poll_s)
            if item is None:
                continue
            try:
                message = json.loads(item[1])
                kind = message["kind"]
            except (ValueError, KeyError, TypeError):
                log.warning("dropping a malformed routing message for bot %s", bot_name)
                continue
            if kind == "event":
                try:
                    await dispatch.on_event(str(message["match_id"]), dict(message["event"]))
                except Exception as exc:
                    log.warning("event for bot %s not delivered: %s", bot_name, exc)
            elif kind == "decide":
                if time.time() > float(message.get("expires_at", 0)) + STALE_GRACE_S:
                    log.info("dropping a stale request for bot %s", bot_name)
                    continue
                task = asyncio.create_task(_answer(client, dispatch, message))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
    finally:
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        await client.aclose()  # type: ignore[attr-defined]  # stubs predate aclose


async def _answer(client: aioredis.Redis[bytes], dispatch: Seat, message: dict[str, Any]) -> None:
    request = DecisionRequest(
        match_id=str(message["match_id"]),
        request_id=str(message["request_id"]),
        seat=int(message["seat"]),
        observation=dict(message["observation"]),
        legal=tuple(message["legal"]),
        deadline_ms=int(message["deadline_ms"]),
        time_bank_ms=int(message["time_bank_ms"]),
    )
    budget_s = float(message.get("budget_ms", request.deadline_ms + request.time_bank_ms)) / 1000
    reply: JSON
    try:
        action = await asyncio.wait_for(dispatch.decide(request), budget_s + WAIT_MARGIN_S)
        reply = {"action": action}
    except TimeoutError:
        return  # the worker has stopped waiting; its referee already played the fallback
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        reply = {"error": f"{type(exc).__name__}: {exc}"}
    target = str(message["reply_to"])
    async with client.pipeline(transaction=True) as pipe:
        pipe.rpush(target, json.dumps(reply, separators=(",", ":")))
        pipe.expire(target, REPLY_TTL_S)
        await pipe.execute()
