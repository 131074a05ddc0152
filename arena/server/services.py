"""The gRPC services: the bots' Play stream and the organiser's administration calls."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

import grpc
from thousand_bot.proto.thousand.v1 import bot_pb2, bot_pb2_grpc, organiser_pb2, organiser_pb2_grpc

from arena import __version__
from arena.server.admission import stop_task
from arena.server.auth import (
    Authenticator,
    BotRegistry,
    Identity,
    RegistryError,
    TokenWatch,
    Verdict,
)
from arena.server.hub import BotHub, Connection, check_writes
from arena.server.limits import (
    BOT_REF_MAX,
    BOTS_MAX,
    HELLO_CLIENT_MAX,
    HELLO_NAME_MAX,
    HELLO_VERSION_MAX,
    MATCH_ID_MAX,
    MATCH_ID_RE,
    OPTIONS_JSON_MAX,
    PRESET_MAX,
    SEED_MAX,
    brief,
    escape,
    quote,
    too_long,
)
from arena.server.matches import MatchError, MatchManager
from arena.server.metrics import GatewayMetrics
from arena.server.streams import read_stream, write_stream

log = logging.getLogger(__name__)

#: What gRPC hands every call of a service.
_Context: TypeAlias = grpc.aio.ServicerContext[Any, Any]


_REGISTRY_CODES = {
    "invalid": grpc.StatusCode.INVALID_ARGUMENT,
    "exists": grpc.StatusCode.ALREADY_EXISTS,
    "not_found": grpc.StatusCode.NOT_FOUND,
}


class _Refusal(Exception):
    """Ends a stream before its welcome with a status and a message for the bot."""

    def __init__(self, code: grpc.StatusCode, message: str, cause: str = "bad_hello") -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.cause = cause


def hello_problem(
    keys: tuple[str, str, str], words: tuple[str, str, str], bot: str | None, whose: str
) -> str | None:
    """What is wrong with a bot's hello, a Play stream's message and a bot program's line
    alike: one of its ``words`` (name, version, client; ``keys``: how the hello names
    them) over its limit, or a name other than ``bot``'s (``whose``: how the bot is known
    to be ``bot``)."""
    for key, word, most in zip(
        keys, words, (HELLO_NAME_MAX, HELLO_VERSION_MAX, HELLO_CLIENT_MAX), strict=True
    ):
        problem = too_long(key, word, most)
        if problem is not None:
            return problem
    name = words[0]
    if bot and name and name != bot:
        return f"hello names bot {quote(name)} but {whose} bot {bot!r}"
    return None


def _hello_problem(hello: bot_pb2.Hello, bot: str) -> str | None:
    problem = hello_problem(
        ("hello.name", "hello.version", "hello.client"),
        (hello.name, hello.version, hello.client),
        bot,
        "the token belongs to",
    )
    if problem is None and hello.max_concurrent_matches < 0:
        return "max_concurrent_matches must not be negative"
    return problem


def _start_problem(request: organiser_pb2.StartMatchRequest) -> str | None:
    """What is over a limit in a StartMatch request, if anything."""
    if len(request.bots) > BOTS_MAX:
        return f"{len(request.bots)} bots were named; a table has at most {BOTS_MAX} seats"
    checks = [
        too_long("preset", request.preset, PRESET_MAX),
        too_long("options_json", request.options_json, OPTIONS_JSON_MAX),
        too_long("seed", request.seed, SEED_MAX),
        too_long("match_id", request.match_id, MATCH_ID_MAX),
        *(too_long(f"bots[{i}]", ref, BOT_REF_MAX) for i, ref in enumerate(request.bots)),
    ]
    problem = next((c for c in checks if c is not None), None)
    if problem is None and request.match_id and not MATCH_ID_RE.match(request.match_id):
        problem = (
            f"match_id {quote(request.match_id)} may hold only letters, digits and "
            "'_', '-', '.', ':', '/'"
        )
    return problem


class BotService(bot_pb2_grpc.BotServiceServicer):
    """One Play stream per bot instance; see ``arena.server.hub`` for the routing.

    Each stream is three tasks: the handler, which waits for the stream to end and gives
    its status; a reader, which judges what the bot sends; a writer, which drains the
    connection's bounded outbox. So a bot that stops reading blocks only its own writer,
    and any part of the gateway can end a stream, even in the middle of a write, with
    ``Connection.end``. A sweeper checks every open stream's token a few times a second
    and cuts off streams whose writes have not moved for ``stall_s``.
    """

    def __init__(
        self,
        hub: BotHub,
        auth: Authenticator,
        metrics: GatewayMetrics,
        watch: TokenWatch | None = None,
    ) -> None:
        self.hub = hub
        self.auth = auth
        self.metrics = metrics
        self.watch = watch or TokenWatch(auth.registry)
        self._sweeper: asyncio.Task[None] | None = None

    async def Play(  # type: ignore[override]  # a coroutine that writes is a valid handler
        self,
        request_iterator: AsyncIterator[bot_pb2.PlayRequest],
        context: _Context,
    ) -> None:
        # Written with context.read and context.write rather than with request_iterator
        # and as a generator: every layer of generator (gRPC's, ours, an interceptor's)
        # costs each message a resumption, and this stream carries every decision of
        # every match.
        identity = self.auth.identify(context.invocation_metadata())
        if identity.verdict is not Verdict.BOT or identity.bot is None:
            # The interceptor refuses these before we get here; this is the second lock.
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, identity.message or "not a bot")
            return
        bot = identity.bot
        limits = self.hub.limits
        if self.watch.streams(bot) >= limits.streams_per_bot:
            self.metrics.stream_cut("too_many_streams")
            await context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"bot {bot!r} already has {limits.streams_per_bot} streams open, the most "
                "one bot may have at once",
            )
            return
        conn: Connection | None = None
        early = asyncio.Event()
        why: list[str] = []

        def revoked(who: Identity) -> None:
            reason = who.message or "the token is no longer valid"
            if conn is not None:
                conn.end(grpc.StatusCode.UNAUTHENTICATED, reason, "revoked")
            else:
                why.append(reason)
                early.set()

        watched = self.watch.add(bot, identity.token_sha256 or "", revoked)
        self._ensure_sweeper()
        try:
            try:
                hello = await self._hello(context, early, why, limits.hello_timeout_s)
                # A revoke committed while the hello was on its way: asked of the registry
                # itself, as a stream is welcomed only once.
                await self.watch.check_fresh()
                if why:
                    raise _Refusal(grpc.StatusCode.UNAUTHENTICATED, why[0], "revoked")
                problem = _hello_problem(hello, bot)
                if problem is not None:
                    raise _Refusal(grpc.StatusCode.INVALID_ARGUMENT, problem)
            except _Refusal as refusal:
                log.info("bot %s refused before its welcome: %s", bot, escape(refusal.message))
                self.metrics.stream_cut(refusal.cause)
                await context.abort(refusal.code, refusal.message)
                return
            conn = self.hub.connect(
                bot, hello.version, hello.max_concurrent_matches, wants_events=not hello.omit_events
            )
            self.metrics.instance_connected(bot)
            log.info(
                "bot %s connected as %s (%s)", bot, conn.instance_id, escape(hello.client) or "?"
            )
            await self._serve(conn, context)
        finally:
            self.watch.discard(watched)

    async def _hello(
        self,
        context: _Context,
        early: asyncio.Event,
        why: list[str],
        timeout_s: float,
    ) -> bot_pb2.Hello:
        """The stream's first message, which must be a hello; a revoke or rotate while the
        bot is still silent ends the stream too."""
        first = asyncio.ensure_future(context.read())
        ender = asyncio.ensure_future(early.wait())
        try:
            await asyncio.wait(
                {first, ender}, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            ender.cancel()
        if not first.done():
            first.cancel()
            with contextlib.suppress(BaseException):
                await first
            if why:
                raise _Refusal(grpc.StatusCode.UNAUTHENTICATED, why[0], "revoked")
            raise _Refusal(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"a Play stream must start with a hello message within {timeout_s:g} s",
            )
        if why:
            raise _Refusal(grpc.StatusCode.UNAUTHENTICATED, why[0], "revoked")
        message: bot_pb2.PlayRequest
        try:
            message = first.result()
        except Exception:  # garbage bytes: the bot is told so, not our internals
            raise _Refusal(
                grpc.StatusCode.INVALID_ARGUMENT,
                "the first message could not be read as a PlayRequest; a Play stream must "
                "start with a hello message",
                "corrupt",
            ) from None
        if message is grpc.aio.EOF:  # read() marks the end of the stream with it
            raise _Refusal(
                grpc.StatusCode.INVALID_ARGUMENT, "the stream ended before its hello message"
            )
        if message.WhichOneof("message") != "hello":
            raise _Refusal(
                grpc.StatusCode.INVALID_ARGUMENT, "a Play stream must start with a hello message"
            )
        return message.hello

    async def _serve(self, conn: Connection, context: _Context) -> None:
        welcome = bot_pb2.PlayResponse(
            welcome=bot_pb2.Welcome(
                bot_name=conn.bot, instance_id=conn.instance_id, server_version=__version__
            )
        )
        # The two loops live in arena.server.streams, which is compiled.
        reader = asyncio.create_task(read_stream(self.hub, self.watch, conn, context))
        writer = asyncio.create_task(write_stream(conn, context, welcome))
        try:
            await conn.ended.wait()
        finally:
            for task in (writer, reader):
                task.cancel()
            for task in (writer, reader):
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            if not conn.closed:
                self.hub.disconnect(conn)
            conn.closed = True
            self.metrics.instance_disconnected(conn.bot)
            reason = f": {conn.end_code.name}: {escape(conn.end_reason)}" if conn.end_code else ""
            log.info("bot %s instance %s disconnected%s", conn.bot, conn.instance_id, reason)
        if conn.end_code is not None:
            if conn.end_cause:
                self.metrics.stream_cut(conn.end_cause)
            await context.abort(conn.end_code, conn.end_reason)

    # --- upkeep -----------------------------------------------------------------------

    async def close(self) -> None:
        """Stop the sweeper (the gateway is stopping)."""
        await stop_task(self._sweeper)
        self._sweeper = None

    def _ensure_sweeper(self) -> None:
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = asyncio.get_running_loop().create_task(
                self._sweep(), name="stream sweeper"
            )

    async def _sweep(self) -> None:
        """Check tokens and stalled writes while any stream is open."""
        limits = self.hub.limits
        while len(self.watch):
            await asyncio.sleep(limits.token_recheck_s)
            try:
                self.watch.check()
            except Exception:  # the registry is unreachable: try again at the next round
                log.exception("could not check the tokens of open streams")
            check_writes(self.hub, self.hub.all_connections(), time.monotonic())


@contextlib.asynccontextmanager
async def _match_errors(context: _Context) -> AsyncIterator[None]:
    """A match the organiser's call names, or would start, ends the call as the match
    manager says why it cannot be (not found, no such bot...)."""
    try:
        yield
    except MatchError as exc:
        await context.abort(exc.code, brief(str(exc)))


@dataclass(eq=False)
class OrganiserService(organiser_pb2_grpc.OrganiserServiceServicer):
    """Administration; the interceptor admits only the organiser token here."""

    registry: BotRegistry
    hub: BotHub
    matches: MatchManager
    auth: Authenticator
    watch: TokenWatch | None = None

    async def _check(self, context: _Context) -> None:
        identity = self.auth.identify(context.invocation_metadata())
        if identity.verdict is not Verdict.ORGANISER:
            await context.abort(
                grpc.StatusCode.PERMISSION_DENIED, "this call needs the organiser token"
            )

    async def _match_check(self, context: _Context, match_id: str) -> None:
        """The organiser's token, and a match id within its limit."""
        await self._check(context)
        problem = too_long("match_id", match_id, MATCH_ID_MAX)
        if problem is not None:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, problem)

    async def _token_call(self, context: _Context, name: str, call: Callable[[str], Any]) -> Any:
        """A change to the token of bot ``name`` in the registry: what ``call`` returns."""
        await self._check(context)
        problem = too_long("name", name, HELLO_NAME_MAX)
        if problem is not None:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, problem)
        try:
            return call(name)
        except RegistryError as exc:
            await context.abort(_REGISTRY_CODES[exc.kind], brief(str(exc)))

    async def RegisterBot(
        self, request: organiser_pb2.RegisterBotRequest, context: _Context
    ) -> organiser_pb2.RegisterBotResponse:
        token = await self._token_call(context, request.name, self.registry.register)
        return organiser_pb2.RegisterBotResponse(name=request.name, token=token)

    async def RevokeToken(
        self, request: organiser_pb2.RevokeTokenRequest, context: _Context
    ) -> organiser_pb2.RevokeTokenResponse:
        await self._token_call(context, request.name, self.registry.revoke)
        closed = await self._end_streams(request.name, "revoked")
        return organiser_pb2.RevokeTokenResponse(name=request.name, sessions_closed=closed)

    async def RotateToken(
        self, request: organiser_pb2.RotateTokenRequest, context: _Context
    ) -> organiser_pb2.RotateTokenResponse:
        token = await self._token_call(context, request.name, self.registry.rotate)
        await self._end_streams(request.name, "replaced by a newer one")
        return organiser_pb2.RotateTokenResponse(name=request.name, token=token)

    async def _end_streams(self, name: str, what: str) -> int:
        """End the streams of the old token now (the token watch finds them all, also
        those that have not said hello yet), and wait until every gateway has seen the
        change; how many ended here."""
        closed = self.watch.check() if self.watch is not None else 0
        # A stream opened through another path than the watch (none today) still ends.
        closed += self.hub.kick(name, f"the token of bot {name!r} has been {what}")
        await asyncio.sleep(self.registry.settle_s)
        return closed

    async def ListBots(
        self, request: organiser_pb2.ListBotsRequest, context: _Context
    ) -> organiser_pb2.ListBotsResponse:
        await self._check(context)
        bots = [
            organiser_pb2.BotInfo(
                # Cut to the limits: a field stored by an older gateway cannot break the list.
                name=r.name[:HELLO_NAME_MAX],
                token_active=r.token_active,
                created_unix_ms=r.created_unix_ms,
                instances=self.hub.instances(r.name),
                pending_requests=self.hub.pending_count(r.name),
                version=self.hub.version(r.name)[:HELLO_VERSION_MAX],
            )
            for r in self.registry.list()
        ]
        return organiser_pb2.ListBotsResponse(bots=bots)

    async def StartMatch(
        self, request: organiser_pb2.StartMatchRequest, context: _Context
    ) -> organiser_pb2.StartMatchResponse:
        await self._check(context)
        problem = _start_problem(request)
        if problem is not None:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, problem)
            return organiser_pb2.StartMatchResponse()
        try:
            options = json.loads(request.options_json) if request.options_json else {}
        except json.JSONDecodeError as exc:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, brief(f"options_json is not valid JSON: {exc}")
            )
            return organiser_pb2.StartMatchResponse()
        time_control = None
        if request.HasField("time_control"):
            tc = request.time_control
            time_control = (tc.decision_ms, tc.bank_ms, tc.strike_limit)
        async with _match_errors(context):
            match_id = await self.matches.start(
                preset=request.preset or "classic",
                options=options,
                seed=request.seed,
                bots=list(request.bots),
                time_control=time_control,
                max_deals=request.max_deals if request.HasField("max_deals") else None,
                match_id=request.match_id or None,
                public_seed=request.public_seed,
            )
        return organiser_pb2.StartMatchResponse(
            match_id=match_id, seed_commitment=self.matches.seed_commitment(match_id)
        )

    async def GetMatchResult(
        self, request: organiser_pb2.GetMatchResultRequest, context: _Context
    ) -> organiser_pb2.GetMatchResultResponse:
        await self._match_check(context, request.match_id)
        async with _match_errors(context):
            data = await self.matches.result_json(request.match_id)
        return organiser_pb2.GetMatchResultResponse(
            result_json=json.dumps(data, separators=(",", ":")))

    async def WatchMatch(
        self, request: organiser_pb2.WatchMatchRequest, context: _Context
    ) -> AsyncIterator[organiser_pb2.WatchMatchResponse]:
        await self._match_check(context, request.match_id)
        async with _match_errors(context):
            events = self.matches.watch(request.match_id)
        async for event in events:
            yield organiser_pb2.WatchMatchResponse(event=event)
