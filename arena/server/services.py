"""The gRPC services: the bots' Play stream and the organiser's administration calls."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import grpc
from google.protobuf.message import DecodeError

from arena import __version__
from arena.proto.thousand.v1 import bot_pb2, bot_pb2_grpc, organiser_pb2, organiser_pb2_grpc
from arena.server.auth import Authenticator, BotRegistry, RegistryError, Verdict
from arena.server.hub import BotHub, Connection, Outgoing
from arena.server.matches import MatchError, MatchManager
from arena.server.metrics import GatewayMetrics

log = logging.getLogger(__name__)

#: How long a new stream may stay silent before its hello.
HELLO_TIMEOUT_S = 30.0

_REGISTRY_CODES = {
    "invalid": grpc.StatusCode.INVALID_ARGUMENT,
    "exists": grpc.StatusCode.ALREADY_EXISTS,
    "not_found": grpc.StatusCode.NOT_FOUND,
}


class BotService(bot_pb2_grpc.BotServiceServicer):
    """One Play stream per bot instance; see ``arena.server.hub`` for the routing."""

    def __init__(self, hub: BotHub, auth: Authenticator, metrics: GatewayMetrics) -> None:
        self.hub = hub
        self.auth = auth
        self.metrics = metrics

    async def Play(  # type: ignore[override]  # a coroutine that writes is a valid handler
        self,
        request_iterator: AsyncIterator[bot_pb2.PlayRequest],
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> None:
        # Written with context.write rather than as a generator: every layer of generator
        # (ours, an interceptor's) costs each message a resumption, and this stream carries
        # every decision of every match.
        identity = self.auth.identify(context.invocation_metadata())
        if identity.verdict is not Verdict.BOT or identity.bot is None:
            # The interceptor refuses these before we get here; this is the second lock.
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, identity.message or "not a bot")
            return
        bot = identity.bot
        try:
            first = await asyncio.wait_for(anext(request_iterator), HELLO_TIMEOUT_S)
        except (StopAsyncIteration, TimeoutError):
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, "a Play stream must start with a hello message"
            )
            return
        if first.WhichOneof("message") != "hello":
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, "a Play stream must start with a hello message"
            )
            return
        hello = first.hello
        if hello.name and hello.name != bot:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"hello names bot {hello.name!r} but the token belongs to bot {bot!r}",
            )
            return
        if hello.max_concurrent_matches < 0:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, "max_concurrent_matches must not be negative"
            )
            return
        conn = self.hub.connect(
            bot, hello.version, hello.max_concurrent_matches, wants_events=not hello.omit_events
        )
        self.metrics.instance_connected(bot)
        log.info("bot %s connected as %s (%s)", bot, conn.instance_id, hello.client or "?")
        reader = asyncio.create_task(self._read(conn, request_iterator))
        try:
            await context.write(
                bot_pb2.PlayResponse(
                    welcome=bot_pb2.Welcome(
                        bot_name=bot, instance_id=conn.instance_id, server_version=__version__
                    )
                )
            )
            outbox = conn.outbox
            while True:
                message = await outbox.get()
                if message is None:
                    break
                if type(message) is Outgoing:
                    message.clock.start()  # the bot's time runs from here
                    message = message.message
                await context.write(message)
            if conn.kicked_reason is not None:
                await context.abort(grpc.StatusCode.UNAUTHENTICATED, conn.kicked_reason)
            if conn.shed_reason is not None:
                await context.abort(grpc.StatusCode.UNAVAILABLE, conn.shed_reason)
            if conn.failure is not None:
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, conn.failure)
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
            if not conn.closed:
                self.hub.disconnect(conn)
            self.metrics.instance_disconnected(bot)
            log.info("bot %s instance %s disconnected", bot, conn.instance_id)

    async def _read(self, conn: Connection, requests: AsyncIterator[bot_pb2.PlayRequest]) -> None:
        try:
            async for message in requests:
                kind = message.WhichOneof("message")
                if kind == "decision":
                    error = self.hub.answer(conn, message.decision)
                    if error is not None:
                        conn.send(bot_pb2.PlayResponse(error=error))
                elif kind == "hello":
                    conn.send(
                        bot_pb2.PlayResponse(
                            error=bot_pb2.Error(
                                code=bot_pb2.ERROR_CODE_PROTOCOL,
                                reason="hello was already received on this stream",
                            )
                        )
                    )
                else:
                    conn.send(
                        bot_pb2.PlayResponse(
                            error=bot_pb2.Error(
                                code=bot_pb2.ERROR_CODE_PROTOCOL,
                                reason="empty message: set hello or decision",
                            )
                        )
                    )
        except asyncio.CancelledError:
            raise
        except DecodeError as exc:
            conn.failure = f"could not parse a PlayRequest: {exc}"
        except Exception as exc:  # the stream broke: the session ends, matches go on
            log.debug("stream of %s ended: %r", conn.instance_id, exc)
        finally:
            conn.outbox.put_nowait(None)


class OrganiserService(organiser_pb2_grpc.OrganiserServiceServicer):
    """Administration; the interceptor admits only the organiser token here."""

    def __init__(
        self,
        registry: BotRegistry,
        hub: BotHub,
        matches: MatchManager,
        auth: Authenticator,
    ) -> None:
        self.registry = registry
        self.hub = hub
        self.matches = matches
        self.auth = auth

    async def _check(self, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        identity = self.auth.identify(context.invocation_metadata())
        if identity.verdict is not Verdict.ORGANISER:
            await context.abort(
                grpc.StatusCode.PERMISSION_DENIED, "this call needs the organiser token"
            )

    async def _registry_call(self, context: grpc.aio.ServicerContext[Any, Any], fn: Any) -> Any:
        try:
            return fn()
        except RegistryError as exc:
            await context.abort(_REGISTRY_CODES[exc.kind], str(exc))

    async def RegisterBot(
        self,
        request: organiser_pb2.RegisterBotRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> organiser_pb2.RegisterBotResponse:
        await self._check(context)
        token = await self._registry_call(context, lambda: self.registry.register(request.name))
        return organiser_pb2.RegisterBotResponse(name=request.name, token=token)

    async def RevokeToken(
        self,
        request: organiser_pb2.RevokeTokenRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> organiser_pb2.RevokeTokenResponse:
        await self._check(context)
        await self._registry_call(context, lambda: self.registry.revoke(request.name))
        closed = self.hub.kick(request.name, f"the token of bot {request.name!r} has been revoked")
        return organiser_pb2.RevokeTokenResponse(name=request.name, sessions_closed=closed)

    async def RotateToken(
        self,
        request: organiser_pb2.RotateTokenRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> organiser_pb2.RotateTokenResponse:
        await self._check(context)
        token = await self._registry_call(context, lambda: self.registry.rotate(request.name))
        self.hub.kick(
            request.name, f"the token of bot {request.name!r} has been replaced by a newer one"
        )
        return organiser_pb2.RotateTokenResponse(name=request.name, token=token)

    async def ListBots(
        self,
        request: organiser_pb2.ListBotsRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> organiser_pb2.ListBotsResponse:
        await self._check(context)
        bots = [
            organiser_pb2.BotInfo(
                name=r.name,
                token_active=r.token_active,
                created_unix_ms=r.created_unix_ms,
                instances=self.hub.instances(r.name),
                pending_requests=self.hub.pending_count(r.name),
                version=self.hub.version(r.name),
            )
            for r in self.registry.list()
        ]
        return organiser_pb2.ListBotsResponse(bots=bots)

    async def StartMatch(
        self,
        request: organiser_pb2.StartMatchRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> organiser_pb2.StartMatchResponse:
        await self._check(context)
        try:
            options = json.loads(request.options_json) if request.options_json else {}
        except json.JSONDecodeError as exc:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, f"options_json is not valid JSON: {exc}"
            )
            return organiser_pb2.StartMatchResponse()
        time_control = None
        if request.HasField("time_control"):
            tc = request.time_control
            time_control = (tc.decision_ms, tc.bank_ms, tc.strike_limit)
        try:
            match_id = await self.matches.start(
                preset=request.preset or "classic",
                options=options,
                seed=request.seed,
                bots=list(request.bots),
                time_control=time_control,
                max_deals=request.max_deals if request.HasField("max_deals") else None,
                match_id=request.match_id or None,
            )
        except MatchError as exc:
            await context.abort(exc.code, str(exc))
            return organiser_pb2.StartMatchResponse()
        return organiser_pb2.StartMatchResponse(match_id=match_id)

    async def WatchMatch(
        self,
        request: organiser_pb2.WatchMatchRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> AsyncIterator[organiser_pb2.WatchMatchResponse]:
        await self._check(context)
        try:
            events = self.matches.watch(request.match_id)
        except MatchError as exc:
            await context.abort(exc.code, str(exc))
            return
        async for event in events:
            yield organiser_pb2.WatchMatchResponse(event=event)
