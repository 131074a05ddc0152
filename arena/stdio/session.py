"""A bot program as an instance of a bot on a hub: the referee's end of the text protocol.

The gateway's hub (:mod:`arena.server.hub`) already does everything a bot needs done to
its answers, whatever carries them: pending requests and their fair clocks, judging an
answer (malformed, illegal, unknown, too long), the error sent back, the budget of refused
messages that cuts off a flood, the bound on messages a bot leaves unread. A gRPC stream
is one transport for a hub :class:`~arena.server.hub.Connection`; a
:class:`ProgramSession` is another: a bot program's pipes. What the bot writes is judged by
the very loop that judges a gRPC stream (:func:`arena.server.streams.read_stream`), and a
stalled pipe is found by the same check (:func:`arena.server.hub.check_writes`), so a
program that writes garbage, stalls, dies or floods gets exactly the refusals, statuses and
strikes a gRPC bot gets.

Lines pair with requests by their order: the program's next line answers the oldest request
written to it that it has not answered (a line with none waiting is refused, as an answer
for an unknown request is). A request's clock starts when it is handed to the pipe.

A session works with any hub: a seat's own (:class:`~arena.stdio.seat.StdioSeat`, a local
match) or a gateway's, where the program is one more instance of a registered bot.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc
from thousand_bot.convert import event_to_dict, observation_to_dict
from thousand_bot.proto.thousand.v1 import bot_pb2
from thousand_bot.stdio.program import BotProgram, LineTooLong
from thousand_bot.stdio.protocol import (
    Hello,
    ProtocolError,
    encode_bye,
    encode_error,
    encode_event,
    encode_request,
    encode_welcome,
    parse_hello,
    unescape,
)

from arena import __version__
from arena.server.hub import BotHub, Connection, Outgoing, check_writes
from arena.server.limits import StreamLimits, escape
from arena.server.services import hello_problem
from arena.server.streams import read_stream

log = logging.getLogger("arena.stdio")

#: How a program's session stands or ended.
STARTING = "starting"
RUNNING = "running"
OK = "ok"
START_FAILED = "start_failed"
CRASHED = "crashed"
TIMEOUT = "timeout"
PROTOCOL_ERROR = "protocol_error"
STATES = (STARTING, RUNNING, OK, START_FAILED, CRASHED, TIMEOUT, PROTOCOL_ERROR)

#: Of a line, the part handed to the hub as the answer: more than any action (so a longer
#: one is judged malformed all the same), far less than a line may hold.
ANSWER_READ_MAX = 1024
#: How long a program that closed its output may take to exit before it is killed.
EXIT_WAIT_S = 2.0

#: Why a hub ended a connection, as the state of the program's session.
_CUT_STATES = {
    "flood": PROTOCOL_ERROR,
    "oversize": PROTOCOL_ERROR,
    "corrupt": PROTOCOL_ERROR,
    "stalled": TIMEOUT,
    "unread": TIMEOUT,
}


@dataclass(frozen=True)
class ProgramStatus:
    """Where a bot program's session stands: ``state`` (one of :data:`STATES`), a line
    for people, and how the process ended when it did (an exit code, or the signal that
    killed it)."""

    state: str = STARTING
    detail: str = ""
    exit_code: int | None = None
    signal: int | None = None

    @property
    def ok(self) -> bool:
        return self.state in (STARTING, RUNNING, OK)

    def __str__(self) -> str:
        return f"{self.state}: {self.detail}" if self.detail else self.state


class _NoWatch:
    """A program has no token to check again (see :class:`arena.server.auth.TokenWatch`)."""

    def check(self, *, fresh: bool = False) -> int:
        return 0


class _Lines:
    """The program's output as the messages the hub's stream reader judges: each line a
    decision for the oldest request it has not answered."""

    def __init__(self, session: ProgramSession) -> None:
        self.session = session

    async def read(self) -> Any:
        session = self.session
        try:
            line = await session.program.read_line()
        except LineTooLong as exc:
            assert session.conn is not None
            session.conn.end(grpc.StatusCode.RESOURCE_EXHAUSTED,
                             f"the bot wrote {exc}; the session is closed", "oversize")
            return grpc.aio.EOF
        if line is None:
            return grpc.aio.EOF
        written = session.written
        if written:
            request_id = session.last_id = written.popleft()
            if not session.hub.waiting(session.bot, request_id):
                session.refuse(f"an answer to request {request_id} after its time ran out")
        else:
            session.refuse("a line while no request was waiting for an answer")
        message = bot_pb2.PlayRequest()
        decision = message.decision
        decision.request_id = session.last_id
        decision.action = line[:ANSWER_READ_MAX]
        return message


class ProgramSession:
    """One bot program played as an instance of ``bot`` on ``hub``, from its hello to its
    end. :meth:`open` starts it; :attr:`ended` is set once it is over, however that came
    about, and :attr:`status` says how."""

    def __init__(
        self,
        hub: BotHub,
        bot: str,
        program: BotProgram,
        *,
        hello_timeout_s: float | None = None,
        expected_name: str | None = None,
        exit_grace_s: float = 2.0,
    ) -> None:
        self.hub = hub
        self.bot = bot
        self.program = program
        self.limits: StreamLimits = hub.limits
        self.hello_timeout_s = (
            self.limits.hello_timeout_s if hello_timeout_s is None else hello_timeout_s
        )
        self.expected_name = expected_name
        self.exit_grace_s = exit_grace_s
        self.hello: Hello | None = None
        self.conn: Connection | None = None
        self.status = ProgramStatus()
        #: Request ids written to the program that it has not answered, oldest first.
        self.written: collections.deque[str] = collections.deque()
        self.last_id = ""
        #: Lines refused outside any decision (nobody asked for them): how many, and the
        #: first few reasons given to the program.
        self.refused = 0
        self.refusals: list[str] = []
        self.ended = asyncio.Event()
        #: Called once the session is over (the caller gives up its pending requests).
        self.on_end: list[Callable[[ProgramStatus], None]] = []
        self._tasks: list[asyncio.Task[Any]] = []
        self._closing: str | None = None
        self._supervisor: asyncio.Task[None] | None = None

    # --- opening -----------------------------------------------------------------------

    async def open(self) -> bool:
        """Start the program and take its hello; False (and :attr:`status` says why) when
        it could not start, broke the protocol or said nothing in time."""
        program = self.program
        try:
            await program.start()
        except OSError as exc:
            return self._failed(START_FAILED, f"cannot start {program.argv[0]}: "
                                f"{exc.strerror or exc}")
        try:
            line = await asyncio.wait_for(program.read_line(), self.hello_timeout_s)
        except TimeoutError:
            await program.kill()
            return self._failed(TIMEOUT, f"said no hello within {self.hello_timeout_s:g} s")
        except LineTooLong as exc:
            await program.kill()
            return self._failed(PROTOCOL_ERROR, f"wrote {exc} instead of its hello")
        if line is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._exit(), EXIT_WAIT_S)
            await program.kill()
            said = f" (its last words: {escape(program.stderr_tail[-1])[:200]})" if (
                program.stderr_tail) else ""
            return self._failed(START_FAILED, f"{program.exit_description()} before its "
                                f"hello{said}", program.returncode)
        try:
            hello = parse_hello(line)
            problem = self._hello_problem(hello)
            if problem is not None:
                raise ProtocolError(problem)
        except ProtocolError as exc:
            program.write(encode_error("", "protocol", str(exc)))
            await program.close(str(exc), 1.0)
            return self._failed(PROTOCOL_ERROR, str(exc))
        self.hello = hello
        conn = self.conn = self.hub.connect(
            self.bot, hello.bot_version, hello.max_matches, wants_events=hello.events
        )
        program.write(encode_welcome(self.bot, conn.instance_id, __version__))
        self.status = ProgramStatus(RUNNING)
        self._tasks = [
            asyncio.ensure_future(self._write(conn)),
            asyncio.ensure_future(read_stream(self.hub, _NoWatch(), conn, _Lines(self))),
            asyncio.ensure_future(self._sweep(conn)),
        ]
        self._supervisor = asyncio.ensure_future(self._supervise(conn))
        log.debug("bot %s: program %s said hello as %s", self.bot, program.pid, conn.instance_id)
        return True

    def _hello_problem(self, hello: Hello) -> str | None:
        return hello_problem(
            ("hello name=", "hello version=", "hello client="),
            (hello.name, hello.bot_version, hello.client),
            self.expected_name,
            "this is",
        )

    def _failed(self, state: str, detail: str, returncode: int | None = None) -> bool:
        self._set_status(state, detail, returncode)
        self._finish()
        return False

    def _set_status(self, state: str, detail: str, returncode: int | None = None) -> None:
        code = sig = None
        if returncode is not None:
            code, sig = (None, -returncode) if returncode < 0 else (returncode, None)
        self.status = ProgramStatus(state, detail, code, sig)

    def _finish(self) -> None:
        if self.ended.is_set():
            return
        self.ended.set()
        for callback in self.on_end:
            try:
                callback(self.status)
            except Exception:
                log.exception("bot %s: a session end callback failed", self.bot)

    async def _exit(self) -> None:
        if self.program.process is not None:
            await self.program.process.wait()

    # --- running -----------------------------------------------------------------------

    async def _write(self, conn: Connection) -> None:
        """Everything the hub has for the bot, in order, as protocol lines; a request's
        clock starts as it is handed to the pipe."""
        program = self.program
        outbox = conn.outbox
        written = self.written
        try:
            while True:
                item = await outbox.get()
                if item is None:
                    break
                if type(item) is Outgoing:
                    data, request_id = _request_text(item.message)
                    written.append(request_id)
                    item.clock.start()
                    if not program.write_bytes(data):
                        break
                else:
                    assert isinstance(item, bot_pb2.PlayResponse)
                    if not program.write(_message_text(item)):
                        break
                if program.unsent_bytes():
                    conn.writing_since = time.monotonic()
                    ok = await program.drain()
                    conn.writing_since = 0.0
                    if not ok:
                        break
        except asyncio.CancelledError:
            raise
        except Exception:  # a message that cannot be written ends the session, not the match
            log.exception("bot %s: writing to its program failed", self.bot)
        conn.end(None)

    def refuse(self, reason: str) -> None:
        """Count a line the hub is about to refuse outside any decision."""
        self.refused += 1
        if len(self.refusals) < 5:
            self.refusals.append(f"refused {reason}")

    async def _sweep(self, conn: Connection) -> None:
        """A pipe the program stopped reading is found as a stream the bot stopped reading
        is, and ends the same way."""
        while not conn.closed:
            await asyncio.sleep(self.limits.token_recheck_s)
            check_writes(self.hub, (conn,), time.monotonic())

    async def _supervise(self, conn: Connection) -> None:
        await conn.ended.wait()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(BaseException):
                await task
        program = self.program
        if self._closing is not None:
            code = await program.close(self._closing, self.exit_grace_s)
            if self.status.state == RUNNING:
                detail = "" if code in (0, None) else f"{program.exit_description()} at the end"
                self._set_status(OK, detail)
        elif conn.end_code is not None:
            # Cut off by the hub (a flood, a line too long, a pipe not read): told why, and
            # stopped.
            program.write(encode_bye(conn.end_reason))
            await program.kill()
            state = _CUT_STATES.get(conn.end_cause, PROTOCOL_ERROR)
            self._set_status(state, conn.end_reason)
            log.info("bot %s: program cut off: %s", self.bot, escape(conn.end_reason))
        else:
            # Its output (or input) closed: it ended, or is about to.
            exited = True
            try:
                await asyncio.wait_for(self._exit(), EXIT_WAIT_S)
            except TimeoutError:
                exited = False
            await program.kill()
            if exited:
                detail = f"{program.exit_description()} during the match"
            else:
                detail = "closed its output during the match; it was killed"
            said = f" (its last words: {escape(program.stderr_tail[-1])[:200]})" if (
                program.stderr_tail) else ""
            self._set_status(CRASHED, detail + said, program.returncode if exited else None)
            log.info("bot %s: program %s", self.bot, detail)
        self._finish()

    # --- closing -----------------------------------------------------------------------

    async def close(self, reason: str = "the session is over") -> ProgramStatus:
        """End the session: ``bye``, the program's input closed, ``exit_grace_s`` for it to
        exit, then SIGTERM and SIGKILL. Its status."""
        conn = self.conn
        if conn is None or self.ended.is_set():
            if self.program.process is not None and self.program.returncode is None:
                await self.program.kill()
            self._finish()
            return self.status
        if self._closing is None:
            self._closing = reason
        conn.end(None)
        if self._supervisor is not None:
            await asyncio.shield(self._supervisor)
        return self.status


def _request_text(message: bytes) -> tuple[bytes, str]:
    """A decision request as the program reads it, and its id. A seat of this package
    hands the hub the text itself; a gateway's remote seat hands it the ``PlayResponse``
    bytes, written out here."""
    if message.startswith(b"request "):
        header = message[: message.index(b"\n")].split(b" ")
        return message, unescape(header[2].decode())
    request = bot_pb2.PlayResponse.FromString(message).decision_request
    text = encode_request(
        request.match_id, request.request_id, observation_to_dict(request.observation),
        request.legal_actions, request.deadline_ms, request.time_bank_ms,
    )
    return text.encode(), request.request_id


def _message_text(message: bot_pb2.PlayResponse) -> str:
    kind = message.WhichOneof("message")
    if kind == "event":
        event = message.event
        return encode_event(event.match_id, event.sequence, event_to_dict(event))
    if kind == "error":
        error = message.error
        code = bot_pb2.ErrorCode.Name(error.code).removeprefix("ERROR_CODE_").lower()
        return encode_error(error.request_id, code, error.reason)
    if kind == "welcome":
        welcome = message.welcome
        return encode_welcome(welcome.bot_name, welcome.instance_id, welcome.server_version)
    return ""
