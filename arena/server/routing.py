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
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError

from arena.referee.types import JSON, DecisionRequest
from arena.server.hub import BotHub
from arena.tournament.routing import REPLY_TTL_S, STALE_GRACE_S, WAIT_MARGIN_S, requests_key

log = logging.getLogger("arena.server.routing")

#: How long one BLPOP blocks: the longest a stopped pump keeps its connection.
POLL_S = 1.0
#: Delays between attempts while Redis is unreachable.
RETRY_INITIAL_S = 0.5
RETRY_MAX_S = 5.0
#: A match routed here is forgotten this long after its end (a second seat of the same bot
#: may still be told the end), or after this long without any message (its worker died).
FORGET_AFTER_END_S = 10.0
FORGET_IDLE_S = 900.0
SWEEP_EVERY_S = 60.0
URL_SCHEMES = ("redis", "rediss", "unix")


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
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


@dataclass(eq=False)
class _Pump:
    bot: str
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None


class RedisRouting:
    """Pumps of Redis request lists for the bots connected to one gateway.

    Created with the gateway's hub; :meth:`start` subscribes to the hub's instance changes
    (so it must run on the gateway's event loop), :meth:`stop_taking` stops popping new
    messages and :meth:`close` waits for the answers still in flight.
    """

    def __init__(self, hub: BotHub, url: str, *, poll_s: float = POLL_S) -> None:
        self.hub = hub
        self.url = check_url(url)
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
        #: Messages handed to the hub, by kind; for tests and the log line at shutdown.
        self.counts: dict[str, int] = {"decide": 0, "event": 0, "stale": 0, "malformed": 0}

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
            self._stop_pump(bot)

    def _stop_pump(self, bot: str) -> None:
        pump = self._pumps.pop(bot)
        pump.stop.set()
        self._stopping.add(pump)

    # --- the pump ---------------------------------------------------------------------

    async def _run(self, pump: _Pump) -> None:
        key = requests_key(pump.bot)
        log.info("routing: serving requests for bot %s from %s", pump.bot, key)
        delay = RETRY_INITIAL_S
        try:
            while not pump.stop.is_set():
                try:
                    item = await self._redis().blpop([key], timeout=self.poll_s)
                except (RedisError, OSError) as exc:
                    self._lost(exc)
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(pump.stop.wait(), delay)
                    delay = min(delay * 2, RETRY_MAX_S)
                    continue
                delay = RETRY_INITIAL_S
                self._back()
                if item is not None:
                    # Once popped a message is this gateway's to deliver, stop or no stop.
                    self._dispatch(pump.bot, item[1])
                self._sweep()
        except Exception:
            log.exception("routing: the pump of bot %s failed", pump.bot)
        finally:
            self._stopping.discard(pump)
            if self._pumps.get(pump.bot) is pump:  # failed rather than stopped
                del self._pumps[pump.bot]
            log.info("routing: stopped serving requests for bot %s", pump.bot)

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
            self.counts["event"] += 1
            n = message.get("n")
            index = n if isinstance(n, int) and not isinstance(n, bool) else None
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
        except (KeyError, TypeError, ValueError):
            self.counts["malformed"] += 1
            log.warning("routing: dropping a malformed decision request for bot %s", bot)
            return
        reply: JSON
        log.debug("routing: asking bot %s for %s", bot, request.request_id)
        try:
            action = await asyncio.wait_for(
                self.hub.decide(bot, request), budget_ms / 1000.0 + WAIT_MARGIN_S
            )
            reply = {"action": action}
        except TimeoutError:
            return  # the match stopped waiting: its referee has played the fallback
        except Exception as exc:
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        log.debug("routing: bot %s answered %s: %s", bot, request.request_id, reply)
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
