"""A bot program as a child process: started, read line by line, written to, stopped.

Both sides of the arena that run a bot program use this class: ``thousand-bot run
--stdio`` (the program plays on a gateway) and the referee's seat for ``cmd:`` bots
(``arena.stdio``). It only moves lines; what they mean is the caller's business.

How the process is started is pluggable, so that a sandbox can start it instead: a
*launcher* is an async callable ``launcher(argv, cwd=..., env=..., capture_stderr=...)``
returning a process object with

* ``stdin`` (an ``asyncio.StreamWriter``), ``stdout`` and, when ``capture_stderr``,
  ``stderr`` (``asyncio.StreamReader``\\s),
* ``pid``, ``returncode`` (None while it runs; negative: the signal that ended it),
* ``async wait() -> int``, ``terminate()`` and ``kill()``, which reach every process the
  bot started (its process group, its sandbox),
* optionally ``exit_reason() -> str | None``: why it ended, in the launcher's own words
  (e.g. ``"killed: over its memory limit of 256 MiB"``), used instead of the exit code's
  plain description.

``asyncio.subprocess.Process`` has all of these but the process-group reach, which
:func:`spawn`, the default launcher, adds (each bot program gets a session of its own).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from thousand_bot.stdio.protocol import LINE_MAX, encode_bye

#: ``transcript(direction, line)``: ``"<"`` for a line the program reads, ``">"`` for one
#: it writes.
Transcript = Callable[[str, str], None]
#: Where the lines the program writes on its standard error go.
LogSink = Callable[[str], None]

#: A stderr line longer than this is cut (the rest of it is dropped).
STDERR_LINE_MAX = 4096
#: The buffer of the pipes' readers: lines up to this long are read in one piece.
_READ_LIMIT = 1 << 16


class ProgramProcess(Protocol):
    """What a launcher returns (see the module's docstring)."""

    @property
    def stdin(self) -> asyncio.StreamWriter | None: ...

    @property
    def stdout(self) -> asyncio.StreamReader | None: ...

    @property
    def stderr(self) -> asyncio.StreamReader | None: ...

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    async def wait(self) -> int: ...

    def terminate(self) -> None: ...

    def kill(self) -> None: ...


class Launcher(Protocol):
    """Starts a bot program (see the module's docstring)."""

    async def __call__(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None,
        env: Mapping[str, str] | None,
        capture_stderr: bool,
    ) -> ProgramProcess: ...


class LineTooLong(Exception):
    """The program wrote a line longer than the protocol allows."""


class _Group:
    """An ``asyncio`` process whose signals reach its whole process group."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self._proc = proc
        self.stdin = proc.stdin
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.pid = proc.pid

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode

    async def wait(self) -> int:
        return await self._proc.wait()

    def _signal(self, sig: int) -> None:
        if self._proc.returncode is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, sig)  # what it left behind
            return
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            with contextlib.suppress(ProcessLookupError):
                self._proc.send_signal(sig)

    def terminate(self) -> None:
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        self._signal(signal.SIGKILL)

    def close(self) -> None:
        """Let go of the pipes (a reader paused on a full buffer never sees their end)."""
        transport = getattr(self._proc, "_transport", None)
        if transport is not None:
            transport.close()


async def spawn(
    argv: Sequence[str],
    *,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    capture_stderr: bool = True,
) -> ProgramProcess:
    """The default launcher: the program in a session of its own, its pipes ours (its
    standard error inherited when not captured)."""
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE if capture_stderr else None,
        cwd=cwd,
        env=dict(env) if env is not None else None,
        start_new_session=True,
        limit=_READ_LIMIT,
    )
    return _Group(proc)


def describe_exit(returncode: int | None) -> str:
    """``exited with code 3``, ``killed by signal 9 (SIGKILL)``."""
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            name = f" ({signal.Signals(-returncode).name})"
        except ValueError:
            name = ""
        return f"killed by signal {-returncode}{name}"
    return f"exited with code {returncode}"


class BotProgram:
    """One run of a bot program: its pipes, its standard error, its end.

    ``stderr`` receives each line the program writes on its standard error, at most
    ``stderr_max_bytes`` of them in all (then one line saying the rest was dropped: a bot
    cannot fill a disk or a terminal); None leaves the program's standard error on ours.
    ``transcript`` sees every protocol line both ways.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        launcher: Launcher | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        stderr: LogSink | None = None,
        stderr_max_bytes: int = 1 << 20,
        transcript: Transcript | None = None,
        line_max: int = LINE_MAX,
    ) -> None:
        if not argv:
            raise ValueError("a bot program needs a command to run")
        self.argv = list(argv)
        self.launcher: Launcher = launcher or spawn
        self.cwd = cwd
        self.env = env
        self.stderr_sink = stderr
        self.stderr_max_bytes = stderr_max_bytes
        self.transcript = transcript
        self.line_max = line_max
        self.process: ProgramProcess | None = None
        #: The last lines of standard error, to quote when the program fails early.
        self.stderr_tail: list[str] = []
        self.stderr_bytes = 0
        self._stderr_task: asyncio.Task[None] | None = None
        self._stdin_broken = False

    # --- starting ----------------------------------------------------------------------

    async def start(self) -> None:
        """Start the program; ``OSError`` (no such file, not executable) when it cannot."""
        self.process = await self.launcher(
            self.argv, cwd=self.cwd, env=self.env, capture_stderr=self.stderr_sink is not None
        )
        if self.process.stderr is not None:
            self._stderr_task = asyncio.ensure_future(self._pump_stderr(self.process.stderr))

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    @property
    def returncode(self) -> int | None:
        return self.process.returncode if self.process is not None else None

    def exit_description(self) -> str:
        """How the program ended, in the launcher's words when it has some."""
        proc = self.process
        if proc is None:
            return "never started"
        reason = getattr(proc, "exit_reason", None)
        if callable(reason):
            text = reason()
            if text:
                return str(text)
        return describe_exit(proc.returncode)

    # --- reading -----------------------------------------------------------------------

    async def read_line(self) -> str | None:
        """The next line the program writes (without its newline), None at the end of its
        output; :class:`LineTooLong` for a line over ``line_max`` bytes."""
        proc = self.process
        assert proc is not None and proc.stdout is not None, "start() the program first"
        reader = proc.stdout
        try:
            data = await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:  # the end, maybe after a last line
            data = exc.partial
            if not data:
                return None
        except asyncio.LimitOverrunError as exc:
            data = await self._long_line(reader, exc.consumed)
        if len(data) > self.line_max:
            raise LineTooLong(f"a line of more than {self.line_max} bytes")
        line = data.decode("utf-8", "replace")
        if line.endswith("\n"):
            line = line[:-1]
        if line.endswith("\r"):
            line = line[:-1]
        if self.transcript is not None:
            self.transcript(">", line)
        return line

    async def _long_line(self, reader: asyncio.StreamReader, consumed: int) -> bytes:
        """A line longer than the reader's buffer, in pieces, up to ``line_max``."""
        parts = [await reader.readexactly(consumed)]
        total = consumed
        while True:
            if total > self.line_max:
                raise LineTooLong(f"a line of more than {self.line_max} bytes")
            try:
                part = await reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                parts.append(exc.partial)
                break
            except asyncio.LimitOverrunError as exc:
                part = await reader.readexactly(exc.consumed)
                parts.append(part)
                total += len(part)
                continue
            parts.append(part)
            break
        return b"".join(parts)

    async def _pump_stderr(self, reader: asyncio.StreamReader) -> None:
        """Hand each standard error line to the sink, up to the cap; then keep reading
        (and dropping) so that the program never blocks on a full pipe."""
        sink = self.stderr_sink
        told_dropped = False
        while True:
            try:
                data = await reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                data = exc.partial
                if not data:
                    return
            except asyncio.LimitOverrunError as exc:
                data = await reader.readexactly(exc.consumed)
            except (OSError, ValueError):
                return
            self.stderr_bytes += len(data)
            text = data.decode("utf-8", "replace").rstrip("\n").rstrip("\r")
            if len(text) > STDERR_LINE_MAX:
                text = text[:STDERR_LINE_MAX] + " [line cut]"
            self.stderr_tail = [*self.stderr_tail[-4:], text]
            if sink is None:
                continue
            if self.stderr_bytes <= self.stderr_max_bytes:
                sink(text)
            elif not told_dropped:
                told_dropped = True
                sink(f"[more standard error dropped: over {self.stderr_max_bytes} bytes]")

    # --- writing -----------------------------------------------------------------------

    def write(self, text: str) -> bool:
        """Queue ``text`` (whole lines) for the program's input; False once its input is
        closed (the program ended or closed it): the caller finds out from its output."""
        proc = self.process
        if proc is None or proc.stdin is None or self._stdin_broken:
            return False
        if self.transcript is not None:
            for line in text.splitlines():
                self.transcript("<", line)
        try:
            proc.stdin.write(text.encode("utf-8"))
        except (BrokenPipeError, ConnectionResetError, RuntimeError):
            self._stdin_broken = True
            return False
        return True

    def write_bytes(self, data: bytes) -> bool:
        """:meth:`write` for text already encoded (the referee's requests)."""
        proc = self.process
        if proc is None or proc.stdin is None or self._stdin_broken:
            return False
        if self.transcript is not None:
            for line in data.decode("utf-8", "replace").splitlines():
                self.transcript("<", line)
        try:
            proc.stdin.write(data)
        except (BrokenPipeError, ConnectionResetError, RuntimeError):
            self._stdin_broken = True
            return False
        return True

    def unsent_bytes(self) -> int:
        """Bytes written but not yet taken by the program (its input pipe was full)."""
        proc = self.process
        if proc is None or proc.stdin is None:
            return 0
        transport: Any = proc.stdin.transport
        return int(transport.get_write_buffer_size())

    async def drain(self) -> bool:
        """Wait until the program has taken what was written (its pipe has room); False
        when its input is gone."""
        proc = self.process
        if proc is None or proc.stdin is None or self._stdin_broken:
            return False
        try:
            await proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError, RuntimeError):
            self._stdin_broken = True
            return False
        return True

    # --- stopping ----------------------------------------------------------------------

    async def close(self, reason: str, grace_s: float = 2.0) -> int | None:
        """Say ``bye``, close the program's input and give it ``grace_s`` to exit; then
        SIGTERM, then SIGKILL. Its exit status (None when it never started)."""
        proc = self.process
        if proc is None:
            return None
        if proc.returncode is None:
            self.write(encode_bye(reason))
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.drain(), grace_s / 2)
            if proc.stdin is not None:
                with contextlib.suppress(Exception):
                    proc.stdin.close()
            if not await self._exited(grace_s):
                proc.terminate()
                if not await self._exited(1.0):
                    proc.kill()
                    await self._exited(5.0)
        else:
            proc.kill()  # its children, if it left any
        await self._finish_stderr()
        self._release()
        return proc.returncode

    async def kill(self) -> None:
        """Stop the program at once (it broke the protocol or was cut off)."""
        proc = self.process
        if proc is None:
            return
        proc.kill()
        await self._exited(5.0)
        await self._finish_stderr()
        self._release()

    def _release(self) -> None:
        """Close what is left of the pipes once the program has ended."""
        proc = self.process
        if proc is None:
            return
        if proc.stdin is not None:
            with contextlib.suppress(Exception):
                proc.stdin.close()
        close = getattr(proc, "close", None)
        if callable(close):
            with contextlib.suppress(Exception):
                close()

    async def _exited(self, seconds: float) -> bool:
        proc = self.process
        assert proc is not None
        try:
            await asyncio.wait_for(proc.wait(), seconds)
        except TimeoutError:
            return False
        return True

    async def _finish_stderr(self) -> None:
        task = self._stderr_task
        if task is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), 1.0)
        except (TimeoutError, Exception):
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
