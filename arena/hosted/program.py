"""``binary`` hosted bots: any Linux executable, speaking the text protocol on its stdin and
stdout (docs/stdio.md), run in the sandbox through the referee's own bridge.

The bridge (:class:`~arena.stdio.seat.StdioSeat`) takes a *launcher* that starts the
program its own way; :class:`SandboxLauncher` starts it in the seat's sandbox, with pipes
for stdin and stdout (the protocol) and the sandbox's capped log for stderr. So a binary
bot is judged, timed, refused and cut off exactly as a ``cmd:`` bot is, and confined
exactly as a Python or Node hosted bot is.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping, Sequence

from arena.sandbox import Bind, Sandbox, SandboxError

#: A protocol line may be up to 1 MiB (the bridge cuts off longer ones): the reader's buffer.
_READ_LIMIT = 1 << 16


class SandboxProcess:
    """The sandboxed program as the bridge sees a process (``ProgramProcess``)."""

    def __init__(self, sandbox: Sandbox, stdin: asyncio.StreamWriter,
                 stdout: asyncio.StreamReader) -> None:
        self.sandbox = sandbox
        self.stdin = stdin
        self.stdout = stdout
        #: None: its standard error is the sandbox's log (capped, for its author).
        self.stderr: asyncio.StreamReader | None = None
        assert sandbox.proc is not None
        self.pid = sandbox.proc.pid

    @property
    def returncode(self) -> int | None:
        proc = self.sandbox.proc
        if proc is None or self.sandbox.running:
            return None
        code = proc.poll()
        if code is not None and code > 128:
            return -(code - 128)  # bubblewrap's way of saying "killed by signal N"
        return code

    async def wait(self) -> int:
        await asyncio.shield(self.sandbox.exited)
        code = self.returncode
        return 0 if code is None else code

    def terminate(self) -> None:
        self.kill()

    def kill(self) -> None:
        """Every process of the seat (the program may have forked)."""
        if self.sandbox.cgroup is not None and self.sandbox.running:
            with contextlib.suppress(Exception):
                self.sandbox.cgroup.kill()
        elif self.sandbox.proc is not None and self.sandbox.running:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.sandbox.proc.pid, signal.SIGKILL)

    def exit_reason(self) -> str | None:
        usage = self.sandbox.cgroup.usage() if self.sandbox.cgroup is not None else None
        if usage is not None and usage.oom_kills:
            return "killed at its memory limit"
        return None


class SandboxLauncher:
    """Starts a binary bot in its seat's sandbox (see the module's docstring)."""

    def __init__(self, sandbox: Sandbox, binds: Sequence[Bind], cwd: str) -> None:
        self.sandbox = sandbox
        self.binds = list(binds)
        self.cwd = cwd

    async def __call__(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        capture_stderr: bool = True,
    ) -> SandboxProcess:
        sandbox = self.sandbox
        sandbox.spawn(argv, binds=self.binds, env={}, cwd=self.cwd, stdio=True)
        if not await sandbox.wait_ready():
            raise SandboxError("the sandbox did not start the program")
        loop = asyncio.get_running_loop()
        stdin_fd, stdout_fd = sandbox.stdin, sandbox.stdout
        assert stdin_fd is not None and stdout_fd is not None
        # The streams own the pipes from here on.
        sandbox.stdin = sandbox.stdout = None
        reader = asyncio.StreamReader(limit=_READ_LIMIT, loop=loop)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                     os.fdopen(stdout_fd, "rb", buffering=0))
        transport, protocol = await loop.connect_write_pipe(
            lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader(loop=loop)),
            os.fdopen(stdin_fd, "wb", buffering=0),
        )
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
        return SandboxProcess(sandbox, writer, reader)
