"""A hosted seat: the bot runs in a sandbox on the worker and plays through its own socket.

The seat serves the bot the very ``Play`` protocol of the gateway, with the gateway's own
code (:class:`~arena.server.services.BotService` and :class:`~arena.server.hub.BotHub`), on a
Unix socket made for this seat alone and bound into its sandbox: the Python SDK and the
Node.js bot run unchanged, and no token enters the sandbox (the socket is the credential).
Each seat has its own hub, so a bot can only ever see and answer its own seat's requests.

The referee talks to the seat as to any remote seat (``submit_game``: the bot's clock
runs from the moment its request is written to its stream). The sandbox is started and the
bot connected *before* the match begins, so start-up is never on the bot's clock. A bot
whose process ends mid-match fails its remaining decisions at once instead of being waited
for, and forfeits on strikes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import grpc
from thousand_bot.proto.thousand.v1 import bot_pb2

from arena.match.types import JSON, DecisionRequest, SeatStats
from arena.referee.clock import BotClock
from arena.referee.submitted import SubmittedSeat
from arena.sandbox import Bind, Limits, Sandbox, SandboxError, SandboxExit, SandboxUnavailable
from arena.sandbox.runtimes import BOT_DIR, RUNTIME_DIR, RuntimeMissing, launch
from arena.server.auth import Authenticator, Identity, TokenWatch, Verdict
from arena.server.hub import BotHub, RemoteSeat
from arena.server.interceptors import BOT_SERVICE
from arena.server.keepalive import keepalive_options
from arena.server.limits import StreamLimits
from arena.server.metrics import GatewayMetrics
from arena.server.services import BotService
from arena.stdio.seat import StdioSeat

from . import status as st
from .status import SeatRun

log = logging.getLogger(__name__)

#: The bot's name in its seat's own hub (the hub serves nobody else).
BOT = "hosted"
SOCKET_NAME = "seat.sock"
#: How long a started bot has to open its seat's stream before it counts as start failed.
DEFAULT_START_TIMEOUT_S = 20.0
#: What a bot whose process ended "answers" to the decision it was thinking about.
DEAD_ANSWER = "(no answer: the bot's process has ended)"
#: Stream causes that are the bot breaking the protocol (see BotService and the hub).
_PROTOCOL_CUTS = frozenset({"bad_hello", "corrupt", "flood", "unread", "stalled",
                            "too_many_streams"})


class PlatformFault(RuntimeError):
    """The platform failed a match (a sandbox could not be set up, a runtime is missing):
    the match is void and is played again; no bot is charged for it."""


@dataclass(frozen=True)
class HostedBot:
    """A version of a hosted bot, ready to run: its files on this host and its manifest."""

    #: The reference in the match spec (``hosted:NAME@HASH``).
    ref: str
    name: str
    version: str
    runtime: str
    entry: str
    files: Path


class _SeatAuth:
    """Every stream on the seat's socket is the seat's bot: reaching the socket (bound
    into its sandbox, and only there) is the proof."""

    def identify(self, metadata: object) -> Identity:
        return Identity(Verdict.BOT, BOT, "seat")


class _SeatWatch:
    """No token to watch: counts the streams only (the service limits them)."""

    def __init__(self) -> None:
        self._open = 0

    def add(self, bot: str, token_sha256: str, end: object) -> object:
        self._open += 1
        return self

    def discard(self, watched: object) -> None:
        self._open = max(0, self._open - 1)

    def streams(self, bot: str) -> int:
        return self._open

    def __len__(self) -> int:
        return self._open

    def __bool__(self) -> bool:  # present even with no stream open
        return True

    def check(self, *, fresh: bool = False) -> int:
        return 0

    async def check_fresh(self) -> int:
        return 0


class _SeatMetrics:
    """Hears why the service cut the bot's streams: a protocol error is the bot's."""

    def __init__(self) -> None:
        self.cuts: list[str] = []

    def instance_connected(self, bot: str) -> None:
        pass

    def instance_disconnected(self, bot: str) -> None:
        pass

    def auth_failure(self, reason: str) -> None:
        pass

    def stream_cut(self, reason: str) -> None:
        self.cuts.append(reason)


def _failed(message: str) -> asyncio.Future[str]:
    fut: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    fut.set_exception(TimeoutError(message))
    return fut


class HostedSeat(SubmittedSeat):
    """One seat of a match played by a hosted bot in a sandbox on this host."""

    in_process = False
    wants_events = True

    def __init__(
        self,
        bot: HostedBot,
        *,
        seat: int = 0,
        limits: Limits | None = None,
        start_timeout_s: float = DEFAULT_START_TIMEOUT_S,
    ) -> None:
        self.bot = bot
        self.seat = seat
        self.name = bot.ref
        self.limits = limits or Limits()
        self.start_timeout_s = start_timeout_s
        self.hub = BotHub(StreamLimits(streams_per_bot=4, hello_timeout_s=10.0))
        self.remote: RemoteSeat | StdioSeat = RemoteSeat(self.hub, BOT)
        #: A binary bot's bridge (the text protocol on its stdin and stdout).
        self.program: StdioSeat | None = None
        self.sandbox: Sandbox | None = None
        self.exit: SandboxExit | None = None
        self.connected_at: float | None = None
        #: Why the bot can no longer answer (its process ended, it never connected).
        self.dead: str | None = None
        self._over = False
        self._exited_during_match = False
        self._metrics = _SeatMetrics()
        self._server: grpc.aio.Server | None = None
        self._outstanding: asyncio.Future[str] | None = None
        self._watcher: asyncio.Task[None] | None = None
        self._connected = asyncio.Event()
        self.hub.instance_listeners.append(self._on_instances)

    # -- start ------------------------------------------------------------------------

    def _on_instances(self, bot: str, count: int) -> None:
        if count > 0 and self.connected_at is None:
            self.connected_at = time.perf_counter()
            self._connected.set()

    async def start(self) -> None:
        """Start the sandbox and wait until the bot has opened its stream.

        Raises :class:`PlatformFault` when the sandbox (or the runtime) fails: nothing of
        that is the bot's. A bot that starts but never connects is left dead (start
        failed) and the match goes on without it.
        """
        self._connected = asyncio.Event()
        try:
            spec = launch(self.bot.runtime, self.bot.entry)
        except RuntimeMissing as exc:
            raise PlatformFault(str(exc)) from exc
        try:
            sandbox = Sandbox(self.limits, label=f"seat{self.seat}")
        except SandboxUnavailable as exc:
            # This host cannot set up sandboxes now: the platform's fault, so the match is
            # void and played again (a passing cause, such as /run being rebuilt, recovers).
            raise PlatformFault(f"seat {self.seat} ({self.bot.name}): {exc}") from exc
        self.sandbox = sandbox
        if self.bot.runtime == "binary":
            await self._start_program(spec.argv)
            return
        try:
            seat_dir = sandbox.prepare()
            socket_path = seat_dir / SOCKET_NAME
            await self._serve(socket_path)
            sandbox.give(socket_path)
            binds = [Bind(self.bot.files, BOT_DIR)]
            if spec.runtime is not None:
                binds.append(Bind(spec.runtime, RUNTIME_DIR))
            sandbox.spawn(spec.argv, binds=binds, env=spec.env, cwd=spec.cwd)
        except SandboxError as exc:
            await self.aclose()
            raise PlatformFault(f"seat {self.seat} ({self.bot.name}): {exc}") from exc
        if not await sandbox.wait_ready():
            self.exit = await sandbox.stop()
            await self.aclose()
            raise PlatformFault(f"seat {self.seat} ({self.bot.name}): {self.exit.describe()}")
        self._watcher = asyncio.ensure_future(self._watch())
        connected = asyncio.ensure_future(self._connected.wait())
        try:
            await asyncio.wait({connected, self._watcher}, timeout=self.start_timeout_s,
                               return_when=asyncio.FIRST_COMPLETED)
        finally:
            connected.cancel()
        if self.connected_at is None and self.dead is None:
            self.dead = f"it did not open its seat's stream within {self.start_timeout_s:g} s"
            self.exit = await sandbox.stop()

    async def _start_program(self, argv: list[str]) -> None:
        """A binary bot: the referee's text-protocol bridge, its program in the sandbox."""
        from .program import SandboxLauncher

        sandbox = self.sandbox
        assert sandbox is not None
        try:
            sandbox.prepare()
        except SandboxError as exc:
            await self.aclose()
            raise PlatformFault(f"seat {self.seat} ({self.bot.name}): {exc}") from exc
        launcher = SandboxLauncher(sandbox, [Bind(self.bot.files, BOT_DIR)], BOT_DIR)
        program = StdioSeat(argv, name=BOT, launcher=launcher, log=lambda line: None,
                            hello_timeout_s=self.start_timeout_s)
        self.program = program
        self.remote = program
        self.hub = program.hub
        try:
            await asyncio.wait_for(program.prepare(), self.start_timeout_s + 5.0)
        except (SandboxError, OSError, TimeoutError) as exc:
            if sandbox.ready_at is None:
                self.exit = await sandbox.stop()
                await self.aclose()
                raise PlatformFault(f"seat {self.seat} ({self.bot.name}): {exc}") from exc
        if sandbox.ready_at is None:
            self.exit = await sandbox.stop()
            await self.aclose()
            raise PlatformFault(f"seat {self.seat} ({self.bot.name}): "
                                f"{self.exit.describe()}")
        if program.status.ok:
            self.connected_at = time.perf_counter()
        else:
            self.dead = program.status.detail or program.status.state
        if sandbox.proc is not None:
            self._watcher = asyncio.ensure_future(self._watch())

    async def _serve(self, path: Path) -> None:
        server = grpc.aio.server(options=[
            ("grpc.max_receive_message_length", 1 << 20),
            ("grpc.max_send_message_length", 1 << 20),
            ("grpc.http2.bdp_probe", 0),
            ("grpc.so_reuseport", 0),
            *keepalive_options(),
        ])
        service = BotService(
            self.hub,
            cast(Authenticator, _SeatAuth()),
            cast(GatewayMetrics, self._metrics),
            cast(TokenWatch, _SeatWatch()),
        )
        play = grpc.stream_stream_rpc_method_handler(
            service.Play,
            request_deserializer=bot_pb2.PlayRequest.FromString,
            response_serializer=None,
        )
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(BOT_SERVICE, {"Play": play}),)
        )
        if server.add_insecure_port(f"unix:{path}") == 0:
            raise SandboxError(f"cannot listen on {path}")
        await server.start()
        self._server = server
        self._service = service

    async def _watch(self) -> None:
        """The bot's process ended: its pending decision and every later one fail now."""
        assert self.sandbox is not None
        await asyncio.shield(self.sandbox.exited)
        if not self._over:
            self._exited_during_match = True
        self.exit = await self.sandbox.stop()
        if self.dead is None:
            self.dead = f"its process ended: {self.exit.describe()}"
        fut = self._outstanding
        if fut is not None and not fut.done():
            # Answered for the bot with a text that is no action: the decision fails now
            # (a strike) rather than when its time runs out. Later ones fail at once.
            fut.set_result(DEAD_ANSWER)

    # -- the Seat protocol ------------------------------------------------------------

    def _track(self, fut: asyncio.Future[str]) -> asyncio.Future[str]:
        if self.dead is not None:
            fut.cancel()
            return _failed(f"the bot cannot answer: {self.dead}")
        self._outstanding = fut
        return fut

    def submit_game(self, *args: Any) -> asyncio.Future[str]:
        if self.dead is not None:
            return _failed(f"the bot cannot answer: {self.dead}")
        return self._track(self.remote.submit_game(*args))

    def submit_clocked(self, request: DecisionRequest, clock: BotClock) -> asyncio.Future[str]:
        if self.dead is not None:
            return _failed(f"the bot cannot answer: {self.dead}")
        return self._track(self.remote.submit_clocked(request, clock))

    async def on_event(self, match_id: str, event: JSON) -> None:
        self.on_event_nowait(match_id, event)

    def on_event_nowait(self, match_id: str, event: JSON) -> None:
        if self.dead is None:
            self.remote.on_event_nowait(match_id, event)
        if event.get("type") == "match_end":
            self._over = True

    # -- the end ----------------------------------------------------------------------

    async def aclose(self) -> None:
        """Stop the bot (every process of its seat) and its socket."""
        self._over = True
        if self.program is not None:
            with contextlib.suppress(Exception):
                await self.program.aclose()
        if self._watcher is not None and not self._watcher.done():
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
        if self.sandbox is not None and self.exit is None:
            self.exit = await self.sandbox.stop()
        elif self.sandbox is not None:
            self.sandbox.close()
        if self._server is not None:
            server, self._server = self._server, None
            await server.stop(grace=0)
            with contextlib.suppress(Exception):
                await self._service.close()

    def run(self, stats: SeatStats | None = None, *, forfeit: bool = False) -> SeatRun:
        """The seat's status for this match (after :meth:`aclose`)."""
        out = SeatRun(seat=self.seat, bot=self.bot.name, version=self.bot.version,
                      status=st.OK)
        exit_ = self.exit
        if exit_ is not None:
            out.log = exit_.log
            out.exit_code = exit_.exit_code
            out.signal = exit_.signal
            if exit_.start_s is not None:
                out.sandbox_ms = round(exit_.start_s * 1000.0, 3)
        if self.connected_at is not None and self.sandbox is not None:
            out.connect_ms = round((self.connected_at - self.sandbox.spawned_at) * 1000, 3)
        out.status, out.detail = self._judge(exit_, stats, forfeit)
        return out

    def _judge_program(self, exit_: SandboxExit, stats: SeatStats | None,
                       forfeit: bool) -> tuple[str, str] | None:
        """A binary bot: the bridge's verdict on its protocol, in the seat's statuses."""
        from arena.stdio import session as ss

        assert self.program is not None
        status = self.program.status
        detail = status.detail or status.state
        if status.state == ss.PROTOCOL_ERROR:
            return st.PROTOCOL_ERROR, detail
        if status.state == ss.START_FAILED or self.connected_at is None:
            return st.START_FAILED, detail
        if status.state == ss.CRASHED or self._exited_during_match:
            return st.CRASH, f"{exit_.describe()} before its match ended"
        if status.state == ss.TIMEOUT and not (stats is not None and stats.timeouts):
            return st.TIMEOUT, detail
        return None

    def _judge(self, exit_: SandboxExit | None, stats: SeatStats | None,
               forfeit: bool) -> tuple[str, str]:
        if exit_ is None or exit_.sandbox_error:
            why = exit_.sandbox_error if exit_ is not None else "it was never started"
            return st.SANDBOX_ERROR, f"the sandbox failed: {why}"
        if exit_.memory_limit:
            return st.MEMORY_LIMIT, f"killed at its memory limit of {self.limits.memory_mb} MiB"
        if exit_.cpu_limit:
            return st.CPU_LIMIT, f"killed at its CPU time limit of {self.limits.cpu_s} s"
        if self.program is not None:
            judged = self._judge_program(exit_, stats, forfeit)
            if judged is not None:
                return judged
        if self.connected_at is None:
            if self._exited_during_match:
                return st.START_FAILED, f"it never opened its seat's stream: {exit_.describe()}"
            return st.START_FAILED, self.dead or "it never opened its seat's stream"
        if self._exited_during_match:
            return st.CRASH, f"{exit_.describe()} before its match ended"
        if exit_.wall_limit:
            return st.TIMEOUT, f"stopped at its wall time limit of {self.limits.wall_s:g} s"
        cuts = [c for c in self._metrics.cuts if c in _PROTOCOL_CUTS]
        if stats is not None and stats.timeouts:
            end = "; it forfeited" if forfeit else ""
            return st.TIMEOUT, f"{stats.timeouts} decision(s) timed out{end}"
        if cuts or (stats is not None and (stats.malformed or stats.illegal)):
            parts = []
            if stats is not None and stats.malformed:
                parts.append(f"{stats.malformed} malformed answer(s)")
            if stats is not None and stats.illegal:
                parts.append(f"{stats.illegal} illegal move(s)")
            if cuts:
                parts.append("its stream was cut: " + ", ".join(sorted(set(cuts))))
            return st.PROTOCOL_ERROR, "; ".join(parts)
        if exit_.output_limit:
            return st.OK, "its output was cut at the limit"
        return st.OK, ""
