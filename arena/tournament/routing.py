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
     "time_bank_ms": 10000, "expires_at": 1700000000.5}
    {"kind": "event", "match_id": "...", "n": 0, "event": {"type": "deal_start", ...}}
    first {"started": true}  when the request is written to the bot's stream, then
    reply: {"action": "bid 105", "bot_ms": 3.2, "platform_ms": 0.4}
           {"timeout": true, "bot_ms": 1000.0, "platform_ms": 0.4}
           {"error": "why no action"}

``bot_ms`` is the bot's own time as the gateway measured it, from writing the request to
the bot's stream to reading the answer; the referee charges the bot that, never the time
the request spent in Redis or queued in a gateway (``platform_ms``).
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
    match ends (the ``match_end`` event) and made again if the seat is used in a new loop.
    """

    def __init__(self, redis_url: str, bot: str, *, forward_events: bool = True) -> None:
        self.redis_url = redis_url
        self.bot = bot
        self.name = bot
        self.forward_events = forward_events
        self._client: aioredis.Redis[bytes] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sequences: dict[str, int] = {}
        self._backlog: list[str] = []
        self._backlog_warned = False

    def _redis(self) -> aioredis.Redis[bytes]:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            # No socket read timeout: a BLPOP may rightly wait longer than redis-py's default
            # 5 s (deadline plus time bank), and its own timeout bounds the wait.
            self._client = aioredis.Redis.from_url(self.redis_url, socket_timeout=None)
            self._loop = loop
        return self._client

    async def decide(self, request: DecisionRequest) -> str:
        return await self.decide_clocked(request, BotClock())

    async def decide_clocked(self, request: DecisionRequest, clock: BotClock) -> str:
        """Ask through Redis; the gateway that holds the bot's stream keeps the bot's clock
        and reports it with the answer, so the time in Redis and in the gateway is the
        platform's, not the bot's.

        A Redis that cannot be reached, or a gateway that holds the bot's lease but does
        not take the request (it died), is the platform's failure (:class:`PlatformError`:
        the fallback, no strike); a bot that no gateway serves has simply not answered.
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
        await self._flush_backlog()  # the bot hears what happened before it is asked
        client = self._redis()
        token = uuid.uuid4().hex
        budget_s = (request.deadline_ms + max(0, request.time_bank_ms)) / 1000.0
        message = {
            "kind": "decide",
            "reply_to": reply_key(token),
            "request_id": request.request_id,
            "match_id": request.match_id,
            "seat": request.seat,
            "observation": request.observation,
            "legal": list(request.legal),
            "deadline_ms": request.deadline_ms,
            "time_bank_ms": request.time_bank_ms,
            "budget_ms": int(budget_s * 1000),
            "expires_at": time.time() + budget_s,
        }
        await client.rpush(requests_key(self.bot), json.dumps(message, separators=(",", ":")))
        # First the gateway says it has written the request to the bot's stream (the bot's
        # time starts there); no gateway takes a request later than STALE_GRACE_S past its
        # expiry, so silence until then means no gateway had the bot: the bot's timeout.
        item = await client.blpop(
            [reply_key(token)], timeout=budget_s + STALE_GRACE_S + WAIT_MARGIN_S
        )
        if item is None:
            holder = await client.get(lease_key(self.bot))
            if holder is not None:
                raise PlatformError(
                    f"gateway {holder.decode(errors='replace')} serves bot '{self.bot}' but "
                    "did not take its request"
                )
            raise RemoteTimeout(f"no gateway answered for bot '{self.bot}' in {budget_s:.1f}s")
        reply = json.loads(item[1])
        if reply.get("started"):
            # The gateway keeps the bot's clock and always answers when it runs out; this
            # wait only bounds a gateway that died meanwhile.
            item = await client.blpop([reply_key(token)], timeout=budget_s + PLATFORM_MARGIN_S)
            if item is None:
                raise PlatformError(
                    f"the gateway serving bot '{self.bot}' went silent after sending it a request"
                )
            reply = json.loads(item[1])
        if "bot_ms" in reply:
            bot_s = float(reply["bot_ms"]) / 1000.0
            total = time.perf_counter() - clock.created
            clock.report(bot_s, max(0.0, total - bot_s))
        if "action" in reply:
            return str(reply["action"])
        if reply.get("timeout"):
            raise RemoteTimeout(f"bot '{self.bot}' did not answer within {budget_s:.1f}s")
        raise RemoteBotError(str(reply.get("error", "no action in reply")))

    async def on_event(self, match_id: str, event: JSON) -> None:
        # Numbered here, at the source: whichever gateway delivers an event (a gateway may
        # take over a bot mid-match) gives it the same sequence number, and a bot seated
        # twice, whose seats both forward every event, is told each number once.
        sequence = self._sequences.get(match_id, 0)
        self._sequences[match_id] = sequence + 1
        if self.forward_events:
            await self.send_event(match_id, event, sequence)
        if event.get("type") == "match_end":
            self._sequences.pop(match_id, None)
            if self._backlog:
                log.warning("bot %s misses the last %d events of match %s: Redis is away",
                            self.bot, len(self._backlog), match_id)
                self._backlog.clear()
            await self.aclose()

    async def send_event(self, match_id: str, event: JSON, sequence: int) -> None:
        """Put one numbered event on the bot's list. While Redis cannot be reached events
        wait here, in order, and go out before anything else once it is back."""
        message = {"kind": "event", "match_id": match_id, "n": sequence, "event": event}
        self._backlog.append(json.dumps(message, separators=(",", ":")))
        try:
            await self._flush_backlog()
        except (RedisError, OSError) as exc:
            if not self._backlog_warned:
                self._backlog_warned = True
                log.warning("events for bot %s wait for Redis: %s", self.bot, exc)

    async def _flush_backlog(self) -> None:
        while self._backlog:
            await self._redis().rpush(requests_key(self.bot), self._backlog[0])
            self._backlog.pop(0)
        self._backlog_warned = False

    async def aclose(self) -> None:
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
