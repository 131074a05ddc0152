"""The gateway's side of decision routing over Redis (``arena serve --routing URL``).

Matches played by tournament executors (a local pool, Celery workers) reach a ``remote:NAME``
bot through Redis: the match pushes decision requests and public events onto the list
``arena:bot:NAME:requests`` and waits for each answer on a reply list of its own (see
:mod:`arena.tournament.routing` for the message format). This module is the other end: while
at least one instance of NAME is connected to this gateway, a pump pops NAME's list and hands
each message to the hub, which sends it down a bot stream exactly as for a match run inside
the gateway; answers go back onto the reply list.

Why it is shaped this way:

* A pump runs only while the bot is here. Popping a request for a bot that is not connected
  would take it away from a gateway that has the bot, so the pump stops as soon as the last
  instance leaves and starts again when one connects. A message already popped is always
  delivered: decisions in flight keep waiting for an answer (the bot may reconnect within
  its time) until their budget runs out, independently of the pump that popped them.
* No busy loop: each pump blocks in ``BLPOP`` with a short timeout, which is also how often it
  notices that it should stop.
* Redis may restart or be briefly unreachable. The pumps then wait and retry with a growing
  delay (up to a few seconds), and the gateway logs one line when Redis is lost and one when
  it is back, instead of a line per attempt. The gateway keeps serving its own matches and
  its bots stay connected meanwhile; the matches on the other side see timeouts, which their
  referee turns into fallback actions and strikes as for any slow bot.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError, ResponseError

from arena.match.types import JSON, DecisionRequest
from arena.referee.clock import BotClock, LoopStalls, wait_answer
from arena.referee.submitted import SubmittedSeat
from arena.server.hub import BotHub, RemoteSeat
from arena.tournament.routing import (
    REPLY_TTL_S,
    SERVED_S,
    STALE_GRACE_S,
    WAIT_MARGIN_S,
    RedisRemoteSeat,
    gateway_key,
    lease_key,
    requests_key,
    safe_redis_url,
    served_key,
)

log = logging.getLogger("arena.server.routing")

#: How long one BLPOP blocks: the longest a stopped pump keeps its connection.
POLL_S = 1.0
#: Most messages taken from a bot's list in one round trip.
POP_MAX = 256
#: Share of a bot's time after which the gateway tells the match it started the bot's
#: clock, when no answer has come yet (the match then waits longer than the bot's time).
STARTED_AFTER = 0.5
#: Delays between attempts while Redis is unreachable.
RETRY_INITIAL_S = 0.5
RETRY_MAX_S = 5.0
#: A match routed here is forgotten this long after its end (a second seat of the same bot
#: may still be told the end), or after this long without any message (its worker died).
FORGET_AFTER_END_S = 10.0
FORGET_IDLE_S = 900.0
SWEEP_EVERY_S = 60.0
URL_SCHEMES = ("redis", "rediss", "unix")
#: How long a gateway's claim on a bot lasts unless renewed: a gateway that dies without
#: releasing it is replaced by a standing-by gateway after this long.
LEASE_S = 3.0

#: Take the lease if nobody holds it, or renew it if we do (and the mark that we serve the
#: bot, which outlives the lease); 1 when ours afterwards.
_TAKE_LEASE = """
local holder = redis.call('GET', KEYS[1])
if holder == false or holder == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[3])
  return 1
end
return 0
"""
#: Release the lease, only if it is still ours; with a second key, the mark that we serve
#: the bot too (the bot has left, rather than moved).
_DROP_LEASE = """
for i, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[1] then
    redis.call('DEL', key)
  end
end
return 0
"""


class RoutingConfigError(ValueError):
    """The routing URL cannot be used (not a Redis URL)."""


def check_url(url: str) -> str:
    """The URL if it names a Redis server; a clear error otherwise."""
    scheme = urlsplit(url).scheme
    if scheme not in URL_SCHEMES:
        raise RoutingConfigError(
            f"--routing must be a Redis URL such as redis://127.0.0.1:6379/0, not {url!r}"
        )
    return url


def safe_url(url: str) -> str:
    """The URL with any password replaced, fit for a log line."""
    return safe_redis_url(url)


@dataclass(eq=False)
class _Pump:
    bot: str
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    #: The bot left this gateway (its last instance went away) rather than being sent to
    #: another one: the mark that it is served somewhere goes with the lease.
    left: bool = False
    #: Whether this gateway holds the bot's lease, and the task renewing it.
    holding: bool = False
    renewer: asyncio.Task[None] | None = None


class RedisRouting:
    """Pumps of Redis request lists for the bots connected to one gateway.

    Created with the gateway's hub; :meth:`start` subscribes to the hub's instance changes
    (so it must run on the gateway's event loop), :meth:`stop_taking` stops popping new
    messages and :meth:`close` waits for the answers still in flight.
    """

    def __init__(
        self,
        hub: BotHub,
        url: str,
        *,
        poll_s: float = POLL_S,
        lease_s: float = LEASE_S,
        gateway_id: str | None = None,
    ) -> None:
        self.hub = hub
        self.url = check_url(url)
        self.lease_s = lease_s
        #: Who holds a bot's lease: unique per gateway process, readable in Redis.
        self.gateway_id = gateway_id or (
            f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        )
        self.shown_url = safe_url(url)
        self.poll_s = poll_s
        self._client: aioredis.Redis[bytes] | None = None
        self._pumps: dict[str, _Pump] = {}
        self._stopping: set[_Pump] = set()
        self._answers: set[asyncio.Task[None]] = set()
        self._seen: dict[tuple[str, str], float] = {}
        self._last_sweep = time.monotonic()
        self._down_since: float | None = None
        self._taking = False
        self._heartbeat: asyncio.Task[None] | None = None
        #: Whether Redis pops several messages at once (BLMPOP, Redis 7).
        self._batched = True
        #: Messages handed to the hub, by kind; for tests and the log line at shutdown.
        self.counts: dict[str, int] = {
            "decide": 0, "event": 0, "stale": 0, "malformed": 0, "gap": 0,
        }

    # --- life cycle -------------------------------------------------------------------

    def _redis(self) -> aioredis.Redis[bytes]:
        if self._client is None:
            # The socket timeout only bounds a read from a server that vanished without
            # closing the connection; BLPOP itself returns within poll_s. One immediate retry
            # on a new connection: after a Redis restart the pooled connections are dead,
            # and an answer must not be lost to one of them.
            self._client = aioredis.Redis.from_url(
                self.url,
                socket_timeout=self.poll_s + 10.0,
                socket_connect_timeout=5.0,
                retry=Retry(NoBackoff(), 1),
                retry_on_error=[RedisConnectionError],
            )
        return self._client

    async def ping(self) -> str | None:
        """None when Redis answers, else why not (for the start-up line)."""
        try:
            await self._redis().ping()
        except (RedisError, OSError) as exc:
            return f"{type(exc).__name__}: {exc}"
        return None

    def start(self) -> None:
        """Follow the hub: pump a bot's list while at least one of its instances is here."""
        self._taking = True
        self.hub.instance_listeners.append(self._instances_changed)
        for bot in self.hub.connected_bots():
            self._instances_changed(bot, self.hub.instances(bot))
        self._heartbeat = asyncio.get_running_loop().create_task(
            self._beat(), name="routing heartbeat"
        )

    async def _beat(self) -> None:
        """Say in Redis that this gateway is up, so that a gateway that stops knows whether
        another one can take its bots."""
        key = gateway_key(self.gateway_id)
        while True:
            with contextlib.suppress(RedisError, OSError):
                await self._redis().set(key, str(time.time()), px=int(self.lease_s * 1000))
            await asyncio.sleep(self.lease_s / 3)

    async def others_up(self) -> list[str]:
        """Ids of the other gateways routing through this Redis now."""
        mine = gateway_key(self.gateway_id)
        try:
            keys = [k async for k in self._redis().scan_iter(match=gateway_key("*"))]
        except (RedisError, OSError):
            return []
        prefix = len(gateway_key(""))
        return sorted(k.decode()[prefix:] for k in keys if k.decode() != mine)

    def stop_taking(self) -> None:
        """Pop nothing more (the gateway is shutting down); answers in flight go on."""
        self._taking = False
        with contextlib.suppress(ValueError):
            self.hub.instance_listeners.remove(self._instances_changed)
        for bot in list(self._pumps):
            self._stop_pump(bot)

    async def close(self, timeout: float = 5.0) -> None:
        """Stop the pumps, give answers in flight up to ``timeout`` seconds, drop the rest."""
        self.stop_taking()
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._heartbeat
            self._heartbeat = None
            with contextlib.suppress(RedisError, OSError):
                await self._redis().delete(gateway_key(self.gateway_id))
        pumps = [p.task for p in self._stopping if p.task is not None]
        if pumps:
            await asyncio.wait(pumps, timeout=self.poll_s + 5.0)
        if self._answers:
            _, late = await asyncio.wait(set(self._answers), timeout=timeout)
            for task in late:
                task.cancel()
            if late:
                await asyncio.wait(late, timeout=5.0)
        if self._client is not None:
            with contextlib.suppress(Exception):
                await self._client.aclose()  # type: ignore[attr-defined]  # stubs predate aclose
            self._client = None
        log.info(
            "routing: stopped after %d decisions and %d events",
            self.counts["decide"],
            self.counts["event"],
        )

    def pumping(self) -> list[str]:
        """Bots whose request lists are being served now."""
        return sorted(self._pumps)

    def _instances_changed(self, bot: str, count: int) -> None:
        if not self._taking:
            return
        if count > 0 and bot not in self._pumps:
            pump = _Pump(bot)
            pump.task = asyncio.get_running_loop().create_task(
                self._run(pump), name=f"routing pump {bot}"
            )
            self._pumps[bot] = pump
        elif count == 0 and bot in self._pumps:
            self._stop_pump(bot, left=True)

    def _stop_pump(self, bot: str, *, left: bool = False) -> None:
        pump = self._pumps.pop(bot)
        pump.left = left
        pump.stop.set()
        self._stopping.add(pump)

    # --- the pump ---------------------------------------------------------------------

    async def _take_lease(self, pump: _Pump) -> bool:
        """Take the bot's lease, or renew it (and the mark that we serve the bot): one
        gateway serves a bot at a time, so that every match's events and requests reach
        the same stream in order; the others stand by and take over when the lease is
        released or runs out."""
        got = await self._redis().eval(  # type: ignore[no-untyped-call]
            _TAKE_LEASE, 2, lease_key(pump.bot), served_key(pump.bot), self.gateway_id,
            int(self.lease_s * 1000), int(SERVED_S * 1000),
        )
        return bool(got)

    def _holding(self, pump: _Pump, holding: bool) -> None:
        if holding == pump.holding:
            return
        pump.holding = holding
        log.info("routing: %s requests for bot %s from %s",
                 "serving" if holding else "standing by for", pump.bot, requests_key(pump.bot))
        if holding and (pump.renewer is None or pump.renewer.done()):
            pump.renewer = asyncio.get_running_loop().create_task(
                self._renew(pump), name=f"routing lease {pump.bot}")

    async def _renew(self, pump: _Pump) -> None:
        """Renew the lease every third of its life while we hold it, beside the pump rather
        than in its loop: a question waiting on the list never waits for a renewal's round
        trip to Redis as well."""
        while pump.holding and not pump.stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(pump.stop.wait(), self.lease_s / 3)
            if not pump.holding or pump.stop.is_set():
                return
            try:
                still = await self._take_lease(pump)
            except (RedisError, OSError):
                continue  # the pump finds the outage itself
            if not still:
                self._holding(pump, False)

    async def _run(self, pump: _Pump) -> None:
        key = requests_key(pump.bot)
        delay = RETRY_INITIAL_S
        try:
            while not pump.stop.is_set():
                try:
                    if not pump.holding:
                        self._holding(pump, await self._take_lease(pump))
                    if not pump.holding:
                        with contextlib.suppress(TimeoutError):
                            await asyncio.wait_for(pump.stop.wait(), self.poll_s)
                        continue
                    items = await self._pop(key)
                except (RedisError, OSError) as exc:
                    self._lost(exc)
                    pump.holding = False
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(pump.stop.wait(), delay)
                    delay = min(delay * 2, RETRY_MAX_S)
                    continue
                delay = RETRY_INITIAL_S
                self._back()
                for item in items:
                    # Once popped a message is this gateway's to deliver, stop or no stop.
                    self._dispatch(pump.bot, item)
                self._sweep()
        except Exception:
            log.exception("routing: the pump of bot %s failed", pump.bot)
        finally:
            self._stopping.discard(pump)
            if self._pumps.get(pump.bot) is pump:  # failed rather than stopped
                del self._pumps[pump.bot]
            if pump.renewer is not None:
                pump.renewer.cancel()
            if pump.holding:
                pump.holding = False
                lease, served = lease_key(pump.bot), served_key(pump.bot)
                keys = [lease, served] if pump.left else [lease]
                with contextlib.suppress(RedisError, OSError):
                    await self._redis().eval(  # type: ignore[no-untyped-call]
                        _DROP_LEASE, len(keys), *keys, self.gateway_id
                    )
            log.info("routing: stopped serving requests for bot %s", pump.bot)

    async def _pop(self, key: str) -> list[bytes]:
        """Whatever waits on the list, up to ``POP_MAX`` messages, in one round trip
        (``BLMPOP``, Redis 7); or, waiting up to ``poll_s``, the first to come. One message
        a round trip would hold a question behind every event queued before it for a round
        trip each: tens of milliseconds apiece with Redis on another host. Before Redis 7,
        one at a time (``BLPOP``)."""
        client = self._redis()
        if self._batched:
            try:
                popped = await client.execute_command(  # type: ignore[no-untyped-call]
                    "BLMPOP", self.poll_s, 1, key, "LEFT", "COUNT", POP_MAX)
            except ResponseError:
                self._batched = False  # a Redis before 7.0
            else:
                return list(popped[1]) if popped else []
        item = await client.blpop([key], timeout=self.poll_s)
        return [item[1]] if item is not None else []

    def _lost(self, exc: BaseException) -> None:
        if self._down_since is None:
            self._down_since = time.monotonic()
            log.warning(
                "routing: Redis at %s is unreachable (%s: %s); remote bots' requests wait "
                "until it is back; retrying every %.0f s at most",
                self.shown_url,
                type(exc).__name__,
                exc,
                RETRY_MAX_S,
            )

    def _back(self) -> None:
        if self._down_since is not None:
            log.warning(
                "routing: Redis at %s is reachable again after %.1f s",
                self.shown_url,
                time.monotonic() - self._down_since,
            )
            self._down_since = None

    def _dispatch(self, bot: str, raw: bytes) -> None:
        try:
            message = json.loads(raw)
            kind = message["kind"]
            match_id = str(message["match_id"])
        except (ValueError, KeyError, TypeError):
            self.counts["malformed"] += 1
            log.warning("routing: dropping a malformed message for bot %s", bot)
            return
        self._seen[(bot, match_id)] = time.monotonic()
        if kind == "event":
            event = message.get("event")
            if not isinstance(event, dict):
                self.counts["malformed"] += 1
                return
            n = message.get("n")
            index = n if isinstance(n, int) and not isinstance(n, bool) else None
            if index is not None and not self.hub.in_order(bot, match_id, index, event):
                # After a gap the next question of the match brings what the bot lacks.
                self.counts["gap"] += 1
                return
            self.counts["event"] += 1
            self.hub.event(bot, match_id, event, index=index)
            if event.get("type") == "match_end":
                self._forget_later(bot, match_id, event)
        elif kind == "decide":
            if time.time() > float(message.get("expires_at", 0)) + STALE_GRACE_S:
                # Nobody waits for it any more: the match's referee already played on.
                self.counts["stale"] += 1
                log.info("routing: dropping a stale request for bot %s", bot)
                return
            self.counts["decide"] += 1
            task = asyncio.get_running_loop().create_task(self._answer(bot, message))
            self._answers.add(task)
            task.add_done_callback(self._answers.discard)
        else:
            self.counts["malformed"] += 1
            log.warning("routing: dropping a message of unknown kind %r for bot %s", kind, bot)

    async def _answer(self, bot: str, message: dict[str, Any]) -> None:
        try:
            request = DecisionRequest(
                match_id=str(message["match_id"]),
                request_id=str(message["request_id"]),
                seat=int(message["seat"]),
                observation=dict(message["observation"]),
                legal=tuple(str(a) for a in message["legal"]),
                deadline_ms=int(message["deadline_ms"]),
                time_bank_ms=int(message["time_bank_ms"]),
            )
            target = str(message["reply_to"])
            budget_ms = float(message.get("budget_ms", request.deadline_ms + request.time_bank_ms))
            tail = [(int(e["n"]), dict(e["event"])) for e in message.get("events") or ()]
        except (KeyError, TypeError, ValueError):
            self.counts["malformed"] += 1
            log.warning("routing: dropping a malformed decision request for bot %s", bot)
            return
        reply: JSON
        log.debug("routing: asking bot %s for %s", bot, request.request_id)
        # The bot's clock is kept here, where its stream is: it runs from the moment the
        # request is written to the stream, and the figure goes back with the answer so
        # that the match's referee charges only that (see arena.referee.clock).
        clock = BotClock(LoopStalls.current())
        # What the bot may lack of the match goes first, on the stream the question takes.
        self.hub.catch_up(bot, request.match_id, tail)
        task = asyncio.ensure_future(self.hub.decide(bot, request, clock))
        lost = False

        def hand_back() -> None:
            # The stream the question went down ended first (the bot, or the network
            # between it and us): the match asks again wherever the bot reconnects, and
            # the time it had the question stays charged.
            nonlocal lost
            lost = True
            task.cancel()

        self.hub.on_loss(request.request_id, hand_back)
        budget_s = budget_ms / 1000.0
        first: set[asyncio.Future[Any]] = {task, clock.started_future()}
        await asyncio.wait(first, timeout=budget_s + WAIT_MARGIN_S,
                           return_when=asyncio.FIRST_COMPLETED)
        if clock.started is not None and not task.done():
            # Tell the match its bot's time has started, so that time spent reaching the
            # bot (Redis, this gateway's queues) is never taken for the bot's; but not for
            # an answer that comes within half the bot's time, which goes back alone: one
            # message, and one round trip to Redis less, for nearly every decision.
            await asyncio.wait({task}, timeout=budget_s * STARTED_AFTER)
            if not task.done():
                await self._push(target, {"started": True})
        waited = await wait_answer(task, clock, budget_s, platform_limit_s=budget_s + WAIT_MARGIN_S)
        timing = {
            "bot_ms": round(clock.bot_s() * 1000.0, 3),
            "platform_ms": round(clock.platform_s() * 1000.0, 3),
        }
        if lost:
            reply = {"lost": True, **timing}
        elif not waited.answered:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
            if waited.platform_fault:
                return  # never delivered: the match's referee sees no answer in time
            reply = {"timeout": True, **timing}
        elif task.cancelled():
            reply = {"error": "the request was withdrawn"}
        elif task.exception() is not None:
            exc = task.exception()
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        else:
            reply = {"action": task.result(), **timing}
        log.debug("routing: bot %s answered %s: %s", bot, request.request_id, reply)
        await self._push(target, reply)

    async def _push(self, target: str, reply: JSON) -> None:
        try:
            async with self._redis().pipeline(transaction=True) as pipe:
                pipe.rpush(target, json.dumps(reply, separators=(",", ":")))
                pipe.expire(target, REPLY_TTL_S)
                await pipe.execute()
        except (RedisError, OSError) as exc:
            # The match waiting on this reply lost Redis too; it counts a timeout.
            self._lost(exc)

    # --- bookkeeping ------------------------------------------------------------------

    def _forget_later(self, bot: str, match_id: str, event: Mapping[str, Any]) -> None:
        def forget() -> None:
            self._seen.pop((bot, match_id), None)
            self.hub.forget(bot, match_id, if_last=event)

        asyncio.get_running_loop().call_later(FORGET_AFTER_END_S, forget)

    def _sweep(self) -> None:
        """Forget matches silent for long: their worker died before the end."""
        now = time.monotonic()
        if now - self._last_sweep < SWEEP_EVERY_S:
            return
        self._last_sweep = now
        for (bot, match_id), seen in list(self._seen.items()):
            if now - seen > FORGET_IDLE_S:
                del self._seen[(bot, match_id)]
                self.hub.forget(bot, match_id)


class HybridSeat(SubmittedSeat):
    """A seat of a match played in this gateway, for a bot that may be here or elsewhere.

    With several gateways serving one pool of bots, the bot of a match started here may be
    connected to another gateway, or move there mid-match (this gateway is stopping and
    sent its bots away). Each decision and event goes straight to the bot's stream when it
    has an instance here, and through Redis to whichever gateway serves it otherwise. The
    seat numbers the events itself, so the bot sees one gapless sequence either way.
    """

    def __init__(self, hub: BotHub, bot: str, redis_url: str) -> None:
        self.hub = hub
        self.bot = bot
        self.name = bot
        self.local = RemoteSeat(hub, bot)
        self.far = RedisRemoteSeat(redis_url, bot)
        self._sequences: dict[str, int] = {}

    def _here(self) -> bool:
        return self.hub.instances(self.bot) > 0

    def submit_clocked(self, request: DecisionRequest, clock: BotClock) -> asyncio.Future[str]:
        if self._here():
            return self.local.submit_clocked(request, clock)
        return asyncio.ensure_future(self.far.decide_clocked(request, clock))

    async def on_event(self, match_id: str, event: JSON) -> None:
        sequence = self._sequences.get(match_id, 0)
        self._sequences[match_id] = sequence + 1
        if self._here():
            self.hub.event(self.bot, match_id, event, index=sequence)
        else:
            await self.far.send_event(match_id, event, sequence)
        if event.get("type") == "match_end":
            self._sequences.pop(match_id, None)
            await self.far.aclose()

    async def aclose(self) -> None:
        await self.far.aclose()
