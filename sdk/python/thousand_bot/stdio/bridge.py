"""``thousand-bot run --stdio -- COMMAND``: a bot program in any language on a gateway.

The bridge starts the program, reads its ``hello``, and opens a ``Play`` stream for it with
the SDK's client (:class:`~thousand_bot.client.BotClient`: the same reconnects, backoff and
re-sent answers as a Python bot). From then on it relays: each decision request, event and
refusal the gateway sends is written to the program in the text protocol
(:mod:`thousand_bot.stdio.protocol`), and each line the program writes is sent back as the
decision for the oldest request it has not answered yet.

The bridge judges nothing itself: a line is handed to the gateway as it was written, so a
garbled or illegal answer, a late one, a line nobody asked for, a flood of them, get the
refusals, strikes and limits a gRPC bot gets there. The program's standard error stays
the bridge's. When the program ends, so does the bridge (a bot that dies stops playing,
exactly as a gRPC bot process that dies): exit 0 when it exited with 0, else 1.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import time
from collections.abc import Sequence
from typing import Any

from thousand_bot import __version__
from thousand_bot.bot import Bot, Observation
from thousand_bot.client import BotClient, TlsSettings
from thousand_bot.convert import observation_to_dict
from thousand_bot.proto.thousand.v1 import bot_pb2
from thousand_bot.stdio.program import BotProgram, LineTooLong, Transcript
from thousand_bot.stdio.protocol import (
    Hello,
    ProtocolError,
    encode_error,
    encode_event,
    encode_request,
    encode_welcome,
    parse_hello,
)

log = logging.getLogger("thousand_bot.stdio")

#: How long a program may take to say hello (as long as a gateway waits for a gRPC hello).
HELLO_TIMEOUT_S = 30.0
#: Of a line, the part handed to the gateway: more than any action (a longer one is
#: refused as malformed all the same), far less than a message may hold.
ANSWER_FORWARD_MAX = 1024
#: Unread input the program may leave in its pipe before it counts as not reading.
UNREAD_MAX_BYTES = 16 << 20
#: Answers waiting to go out to the gateway before the bridge stops reading the program:
#: a program writing faster than the gateway takes its lines (a flood) then blocks on its
#: own output, instead of the bridge buffering it without bound.
BACKLOG_MAX = 1024
CLIENT = f"thousand-bot-stdio/{__version__}"


class ProgramFailed(Exception):
    """The bot program could not start, broke the protocol or ended; ``exit_code`` is
    what ``thousand-bot`` exits with."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class _ProgramBot(Bot):
    """The program as the client sees it: its hello, and somewhere to write events and
    refusals to. Decisions never reach it (:meth:`StdioClient._decide` takes them)."""

    def __init__(self, program: BotProgram, hello: Hello) -> None:
        self.program = program
        self.hello = hello
        self.name = hello.name
        self.version = hello.bot_version
        self.max_concurrent_matches = hello.max_matches

    def wants_events(self) -> bool:
        return self.hello.events

    def decide(self, observation: Observation, legal: list[str]) -> str:  # pragma: no cover
        raise AssertionError("the bridge answers from the program's output")

    def on_event(self, event: dict[str, Any]) -> None:
        self.program.write(encode_event(str(event.get("match_id", "")),
                                        int(event.get("sequence", 0)), event))

    def on_error(self, request_id: str, code: str, reason: str) -> None:
        self.program.write(encode_error(request_id, code.removeprefix("ERROR_CODE_").lower(),
                                        reason))


class StdioClient(BotClient):
    """A :class:`BotClient` whose answers come from a program's output, in order."""

    def __init__(self, program: BotProgram, hello: Hello, server: str, token: str,
                 **kwargs: Any) -> None:
        super().__init__(_ProgramBot(program, hello), server, token, on_welcome=self._welcomed,
                         **kwargs)
        self.program = program
        self.client_name = f"{hello.client} via {CLIENT}" if hello.client else CLIENT
        #: Requests written to the program and not answered by it yet, oldest first.
        self._asked: collections.deque[tuple[bot_pb2.DecisionRequest, float]] = (
            collections.deque()
        )
        self._last = bot_pb2.DecisionRequest()

    def _welcomed(self, welcome: bot_pb2.Welcome) -> None:
        self.program.write(
            encode_welcome(welcome.bot_name, welcome.instance_id, welcome.server_version)
        )

    def _decide(self, msg: bot_pb2.DecisionRequest, started: float) -> str | None:
        self.program.write(encode_request(
            msg.match_id, msg.request_id, observation_to_dict(msg.observation),
            msg.legal_actions, msg.deadline_ms, msg.time_bank_ms,
        ))
        self._asked.append((msg, started))
        return None  # answered by answer_line

    def answer_line(self, line: str) -> None:
        """The program's next line answers the oldest request it has not answered; with
        none waiting it still goes to the gateway (for the last request), which refuses
        it as it refuses any answer nobody asked for."""
        if self._asked:
            msg, started = self._asked.popleft()
            self._last = msg
        else:
            msg, started = self._last, time.perf_counter()
        self._send(msg, line[:ANSWER_FORWARD_MAX], started)

    def backlog(self) -> int:
        """Answers not yet handed to the stream (or kept for the next session)."""
        writer = self._writer
        return len(writer.queue) if writer is not None else len(self._unsent)


async def _read_hello(program: BotProgram, timeout_s: float) -> Hello:
    try:
        line = await asyncio.wait_for(program.read_line(), timeout_s)
    except TimeoutError:
        await program.kill()
        raise ProgramFailed(f"the bot's program said no hello within {timeout_s:g} s") from None
    except LineTooLong as exc:
        await program.kill()
        raise ProgramFailed(f"the bot's program wrote {exc} instead of its hello") from None
    if line is None:
        await program.close("no hello", 1.0)
        raise ProgramFailed(
            f"the bot's program {program.exit_description()} before its hello"
        )
    try:
        return parse_hello(line)
    except ProtocolError as exc:
        program.write(encode_error("", "protocol", str(exc)))
        await program.close(str(exc), 1.0)
        raise ProgramFailed(f"the bot's program: {exc}") from None


async def run_program(
    argv: Sequence[str],
    server: str,
    token: str,
    *,
    stop: asyncio.Event | None = None,
    max_attempts: int | None = None,
    transcript: Transcript | None = None,
    hello_timeout_s: float = HELLO_TIMEOUT_S,
    program: BotProgram | None = None,
    tls: TlsSettings | None = None,
) -> None:
    """Run the program as a bot on the gateway until ``stop`` is set or it ends.

    Raises :class:`ProgramFailed` when the program cannot start, breaks the protocol or
    ends on its own (``exit_code`` 0 when it exited with 0), and what the client raises:
    ``BotRejected`` (the token is refused), ``ConnectionError`` (no gateway answers).
    """
    stop = stop or asyncio.Event()
    program = program or BotProgram(argv, stderr=None, transcript=transcript)
    try:
        await program.start()
    except OSError as exc:
        raise ProgramFailed(f"cannot start {argv[0]}: {exc.strerror or exc}") from None
    hello = await _read_hello(program, hello_timeout_s)
    client = StdioClient(program, hello, server, token, max_attempts=max_attempts, tls=tls)
    client_task = asyncio.ensure_future(client.run(stop))
    reader = asyncio.ensure_future(_relay_answers(program, client))
    watcher = asyncio.ensure_future(_watch_input(program))
    stopper = asyncio.ensure_future(stop.wait())
    failure: ProgramFailed | None = None
    try:
        done, _ = await asyncio.wait({client_task, reader, watcher, stopper},
                                     return_when=asyncio.FIRST_COMPLETED)
        if reader in done or watcher in done:
            failure = (reader if reader in done else watcher).result()
    finally:
        stop.set()
        for task in (reader, watcher, stopper):
            task.cancel()
        # The client finishes its session (cancelling answers still on their way).
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(client_task, return_exceptions=True)
        if failure is None:
            await program.close("stopped")
        else:
            await program.kill()
    if client_task.done() and not client_task.cancelled():
        client_task.result()  # BotRejected, ConnectionError
    if failure is not None:
        if failure.exit_code == 0:
            log.info("%s", failure)
        raise failure


async def _relay_answers(program: BotProgram, client: StdioClient) -> ProgramFailed:
    """Every line the program writes, to the client, until its output ends."""
    lines = 0
    try:
        while True:
            line = await program.read_line()
            if line is None:
                break
            client.answer_line(line)
            lines += 1
            if lines % 64 == 0:
                # Lines already read come back without a pause: let the stream write too.
                await asyncio.sleep(0)
            while client.backlog() > BACKLOG_MAX:
                await asyncio.sleep(0.01)
    except LineTooLong as exc:
        return ProgramFailed(f"the bot's program wrote {exc}; it was stopped")
    # Its output is closed: it has ended, or will in a moment.
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(_wait(program), 2.0)
    code = program.returncode
    return ProgramFailed(f"the bot's program {program.exit_description()}",
                         0 if code == 0 else 1)


async def _wait(program: BotProgram) -> None:
    if program.process is not None:
        await program.process.wait()


async def _watch_input(program: BotProgram) -> ProgramFailed:
    """Ends the run when the program stops reading its input (what waits for it grows
    without bound otherwise)."""
    while program.unsent_bytes() <= UNREAD_MAX_BYTES:
        await asyncio.sleep(1.0)
    return ProgramFailed(
        f"the bot's program does not read its input ({UNREAD_MAX_BYTES >> 20} MiB were "
        "waiting for it); it was stopped"
    )

