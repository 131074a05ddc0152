"""A seat played by a bot program over the text protocol: ``cmd:COMMAND`` bots.

``arena match 'cmd:./mybot' greedy random``, ``arena bot-check 'cmd:./mybot'`` and a
tournament participant ``cmd:...`` all play through a :class:`StdioSeat`: the program is
started when the match is about to begin (:meth:`StdioSeat.prepare`, which the referee
awaits before the first deal, so a slow start costs no decision any time), says hello,
plays every decision of the seat, and is told ``bye`` and stopped at the end
(:meth:`StdioSeat.aclose`).

The seat plays through a gateway's remote seat (:class:`~arena.server.hub.RemoteSeat`) on
a hub of its own, with the program connected to that hub as the bot's one instance
(:class:`~arena.stdio.session.ProgramSession`): its answers are judged, refused, timed
and cut off exactly as a gRPC bot's are. One difference: a program that has ended cannot
come back the way a gRPC bot reconnects, so from then on the seat's decisions time out at
once instead of each waiting out the clock; they cost the same strikes, and the match
reaches its end (a forfeit at the strike limit) without waiting for anybody.

For a sandbox (or anything else that starts processes its own way), the interface:

* ``StdioSeat(argv, name=..., launcher=..., log=..., log_max_bytes=...)``: ``argv`` is
  the program's command line; ``launcher`` starts it (see
  :mod:`thousand_bot.stdio.program`: an async callable
  ``launcher(argv, cwd=, env=, capture_stderr=)`` returning a process with
  ``stdin``/``stdout``/``stderr`` streams, ``pid``, ``returncode``, ``wait()``,
  ``terminate()``, ``kill()`` and optionally ``exit_reason()``; the default is
  :func:`thousand_bot.stdio.program.spawn`); ``log(line)`` receives each line of the
  program's standard error, at most ``log_max_bytes`` in all (default: the
  ``arena.stdio`` logger), never the protocol;
* :attr:`StdioSeat.status`: a :class:`~arena.stdio.session.ProgramStatus` with ``state``
  one of ``starting``, ``running``, ``ok``, ``start_failed`` (the program could not be
  started, or ended before its hello), ``crashed`` (it ended during the match: its
  ``exit_code``, or the ``signal`` that killed it, and the launcher's ``exit_reason``),
  ``timeout`` (no hello in time, a decision not answered in time, its input not read) or
  ``protocol_error`` (a bad hello, a flood of lines nobody asked for, a line over 1 MiB);
  ``detail`` says it in a line;
* ``await seat.prepare()`` starts it, ``await seat.aclose()`` stops it (both idempotent).

To run a program as an instance of a bot registered on a gateway instead (many matches
through one process), open a :class:`~arena.stdio.session.ProgramSession` on the
gateway's hub (``ProgramSession(hub, name, BotProgram(argv, launcher=...),
expected_name=name)``, then ``await session.open()``; ``await session.close(reason)`` ends
it, and its ``status`` is the same as a seat's).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from thousand_bot.stdio.program import BotProgram, Launcher, LogSink, Transcript
from thousand_bot.stdio.protocol import encode_request

from arena.engine.game import Game
from arena.match.command import parse_command, program_problem
from arena.match.types import JSON, DecisionRequest
from arena.referee.clock import BotClock, new_future
from arena.referee.errors import fail_decision
from arena.referee.submitted import SubmittedSeat
from arena.server.hub import BotHub, RemoteSeat
from arena.server.limits import StreamLimits, escape
from arena.stdio.session import (
    OK,
    RUNNING,
    STARTING,
    TIMEOUT,
    ProgramSession,
    ProgramStatus,
)

log = logging.getLogger("arena.stdio")

#: Standard error a seat's program may write per match before the rest is dropped.
LOG_MAX_BYTES = 1 << 20


def _gone(status: ProgramStatus) -> TimeoutError:
    """What a decision the program can no longer answer fails with."""
    return TimeoutError(f"the bot's program {status.detail or status.state}")


def _log_sink(name: str) -> LogSink:
    def sink(line: str) -> None:
        log.info("%s: %s", name, escape(line))

    return sink


class StdioSeat(SubmittedSeat):
    """A seat played by a bot program (see the module's docstring).

    It holds a :class:`RemoteSeat` rather than being one (a compiled class takes no
    interpreted subclass): events go through it, to be numbered and skipped as for a
    remote bot; requests are written here, as text."""

    in_process = False

    def __init__(
        self,
        argv: Sequence[str],
        *,
        name: str,
        launcher: Launcher | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        log: LogSink | None = None,
        log_max_bytes: int = LOG_MAX_BYTES,
        transcript: Transcript | None = None,
        limits: StreamLimits | None = None,
        hello_timeout_s: float | None = None,
        exit_grace_s: float = 2.0,
    ) -> None:
        self.hub = BotHub(limits)
        self.bot = self.name = name
        self._remote = RemoteSeat(self.hub, name)
        #: Events only go onto the program's outgoing queue: the referee need not wait.
        self.on_event_nowait = self._remote.on_event_nowait
        self.program = BotProgram(
            argv, launcher=launcher, cwd=cwd, env=env, stderr=log or _log_sink(name),
            stderr_max_bytes=log_max_bytes, transcript=transcript,
        )
        self.session = ProgramSession(self.hub, name, self.program,
                                      hello_timeout_s=hello_timeout_s,
                                      exit_grace_s=exit_grace_s)
        self.session.on_end.append(self._ended)
        #: Decisions the referee gave up on before the program answered them.
        self.timeouts = 0
        self._waiting: dict[str, asyncio.Future[str]] = {}
        self._opening: asyncio.Future[bool] | None = None

    @classmethod
    def from_ref(cls, ref: str, *, check: bool = True, **kwargs: Any) -> StdioSeat:
        """The seat of a ``cmd:COMMAND`` reference; ValueError when the command is empty
        or (with ``check``) names no program that can run."""
        argv = parse_command(ref)
        if check:
            problem = program_problem(argv, kwargs.get("cwd"))
            if problem is not None:
                raise ValueError(f"bot {ref!r}: {problem}")
        return cls(argv, name=kwargs.pop("name", ref), **kwargs)

    # --- the program's life ------------------------------------------------------------

    @property
    def status(self) -> ProgramStatus:
        """How the program is doing, or how it ended (see the module's docstring)."""
        status = self.session.status
        if self.timeouts and status.state in (STARTING, RUNNING, OK):
            return ProgramStatus(TIMEOUT, f"{self.timeouts} decision(s) not answered in time",
                                 status.exit_code, status.signal)
        return status

    async def prepare(self) -> None:
        """Start the program and take its hello (once; later calls wait for the first)."""
        if self._opening is None:
            self._opening = asyncio.ensure_future(self.session.open())
        await asyncio.shield(self._opening)

    async def aclose(self) -> None:
        """Tell the program the match is over and stop it."""
        if self._opening is not None and not self._opening.done():
            await asyncio.shield(self._opening)
        await self.session.close("the match is over")

    def _ended(self, status: ProgramStatus) -> None:
        """The program is gone: what it was asked and had not answered times out now."""
        for future in list(self._waiting.values()):
            fail_decision(future, _gone(status))

    # --- decisions ---------------------------------------------------------------------

    def submit_clocked(self, request: DecisionRequest, clock: BotClock) -> asyncio.Future[str]:
        if self.session.ended.is_set():
            stalls = clock.stalls
            loop = stalls.loop if stalls is not None else asyncio.get_running_loop()
            future: asyncio.Future[str] = new_future(loop)
            fail_decision(future, _gone(self.session.status))
            return future
        if self._opening is None:  # a seat used without prepare(): started on first use
            self._opening = asyncio.ensure_future(self.session.open())
        match_id, request_id, legal = request.match_id, request.request_id, tuple(request.legal)
        text = encode_request(match_id, request_id, request.observation, legal,
                              request.deadline_ms, request.time_bank_ms)
        future = self.hub.submit_message(self.bot, match_id, request_id, legal, text.encode(),
                                         clock)
        self._waiting[request_id] = future
        future.add_done_callback(self._settled)
        return future

    def _settled(self, future: asyncio.Future[str]) -> None:
        for request_id, waiting in list(self._waiting.items()):
            if waiting is future:
                del self._waiting[request_id]
                break
        if future.cancelled() and not self.session.ended.is_set():
            self.timeouts += 1

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
        """The request as its parts, as the referee hands them to a gateway's remote seat
        (:meth:`RemoteSeat.submit_game <arena.server.hub.RemoteSeat.submit_game>`), which
        a hosted bot's seat passes on to its program too."""
        request = DecisionRequest(match_id, request_id, seat, game.observation(seat), legal,
                                  deadline_ms, time_bank_ms)
        return self.submit_clocked(request, clock)

    async def decide_clocked(self, request: DecisionRequest, clock: BotClock) -> str:
        answer: Any = await self.submit_clocked(request, clock)
        if isinstance(answer, BaseException):  # handed over by errors.fail_decision
            raise answer
        return str(answer)

    async def on_event(self, match_id: str, event: JSON) -> None:
        self._remote.on_event_nowait(match_id, event)
