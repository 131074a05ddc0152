"""One sandboxed process tree: started, watched, limited, and ended with its match.

How a sandbox starts (each step is the platform's; only after the last one is anything the
bot's):

1. a seat uid is leased and a cgroup with the seat's limits is made;
2. ``/bin/sh`` is started as that uid, blocked on a pipe; meanwhile the worker moves it
   into the cgroup and sets its rlimits (CPU seconds, file size, open files, no core
   dumps), then lets it go: it ``exec``\\ s bubblewrap, so every later process of the seat
   starts inside the cgroup and under the limits, without code run between ``fork`` and
   ``exec`` in the worker (which has threads: gRPC's);
3. bubblewrap builds the sandbox (new user, pid, network, mount, ipc, uts and cgroup
   namespaces; a read-only root of ``/usr``, the runtime and the bot; a private tmpfs home
   and /tmp of fixed size; a synthetic /etc; the seccomp filter), runs a shell that writes
   one byte on the *ready* pipe and ``exec``\\ s the bot's entry.

The ready byte is the line between the two: a sandbox that never sends it failed to
start through the platform's fault (``sandbox error``), and the time until it arrives is
the sandbox's start time. Output (stdout and stderr together, or stderr alone when stdout
is the bot's protocol) is read up to ``output_kb`` and its first ``log_kb`` kept as the
seat's log; then the pipe is closed, so a flood of output ends in EPIPE for the bot, not
in work for the worker.

Every process of the seat ends with :meth:`Sandbox.stop`: the cgroup is emptied with
SIGKILL (``cgroup.kill`` on v2), which also takes double-forked daemons, and the pid
namespace dies with its first process anyway; the worker reaps its own child through a
pidfd.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import resource
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from arena.sandbox.cgroups import CgroupError, CgroupUsage, SeatCgroup
from arena.sandbox.host import (
    INNER_HOME,
    INNER_UID,
    SandboxError,
    SandboxHost,
    UidLease,
)
from arena.sandbox.limits import Limits

#: Where the seat's own directory (its socket) appears inside the sandbox.
SEAT_DIR = "/run/seat"
#: The fds the outer shell hands on: the gate it waits on, then to bubblewrap the ready
#: pipe and the seccomp filter.
_GATE_FD, _READY_FD, _SECCOMP_FD = 3, 4, 5
#: Passed fds are first moved at or above this, clear of 3-5, so the shell's remapping
#: never overwrites one with another.
_HIGH_FD = 20


@dataclass(frozen=True)
class Bind:
    """A host path shown read-only inside the sandbox at ``target``."""

    source: Path
    target: str


@dataclass
class SandboxExit:
    """How a sandbox ended, in the kernel's terms; the seat turns it into a status."""

    #: The sandbox never got as far as starting the bot: the platform's fault.
    sandbox_error: str | None = None
    #: The bot's entry was started (the ready byte came).
    ready: bool = False
    #: Its exit code, or the signal that ended it (None when stopped by the worker).
    exit_code: int | None = None
    signal: int | None = None
    #: Stopped by the worker: the match ended, or :meth:`Sandbox.stop` for another reason.
    stopped: bool = False
    memory_limit: bool = False
    cpu_limit: bool = False
    wall_limit: bool = False
    output_limit: bool = False
    #: Seconds from the spawn to the ready byte.
    start_s: float | None = None
    usage: CgroupUsage = field(default_factory=CgroupUsage)
    log: bytes = b""

    def describe(self) -> str:
        """One line a bot author understands."""
        if self.sandbox_error:
            return f"the sandbox failed: {self.sandbox_error}"
        if self.memory_limit:
            return "killed at its memory limit"
        if self.cpu_limit:
            return "killed at its CPU time limit"
        if self.wall_limit:
            return "stopped at its wall time limit"
        extra = "; wrote more output than allowed" if self.output_limit else ""
        if self.signal is not None:
            try:
                name = signal.Signals(self.signal).name
            except ValueError:
                name = str(self.signal)
            return f"killed by signal {name}{extra}"
        if self.exit_code is not None:
            return f"exited with code {self.exit_code}{extra}"
        return f"stopped at the end of its match{extra}"


class Sandbox:
    """One seat's sandbox; use :meth:`prepare`, :meth:`spawn`, then :meth:`stop`."""

    def __init__(self, limits: Limits, *, label: str = "seat",
                 host: SandboxHost | None = None) -> None:
        self.limits = limits
        self.label = label
        self.host = host or SandboxHost.get()
        self.uid_lease: UidLease | None = None
        self.cgroup: SeatCgroup | None = None
        #: The seat's directory on the host (0700, the seat's uid): bound at SEAT_DIR.
        self.seat_dir: Path | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        #: The bot's stdin and stdout when it speaks on them (``stdio=True``).
        self.stdin: int | None = None
        self.stdout: int | None = None
        self.spawned_at = 0.0
        self.ready_at: float | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready: asyncio.Future[bool] | None = None
        self._exited: asyncio.Future[None] | None = None
        self._fds: list[int] = []
        self._log = bytearray()
        self._output = 0
        self._output_limit = False
        self._wall: asyncio.TimerHandle | None = None
        self._wall_hit = False
        self._stopping = False
        self._early = bytearray()
        self._helpers: list[int] = []
        self._result: SandboxExit | None = None
        self._closed = False

    # -- set-up -----------------------------------------------------------------------

    @property
    def uid(self) -> int:
        return self.uid_lease.uid if self.uid_lease is not None else os.geteuid()

    def prepare(self) -> Path:
        """Lease a uid, make the cgroup and the seat's directory; returns the directory."""
        host = self.host
        try:
            if host.uids is not None:
                self.uid_lease = host.uids.acquire()
            self.cgroup = host.cgroups.create(self.limits, self.label)
            name = self.cgroup.name
            seat_dir = host.seats_dir / name
            seat_dir.mkdir(mode=0o700)
            self.seat_dir = seat_dir
            if host.uids is not None:
                os.chown(seat_dir, self.uid, self.uid)
        except (CgroupError, OSError) as exc:
            self.close()
            raise SandboxError(f"cannot prepare the sandbox: {exc}") from exc
        return seat_dir

    def give(self, path: Path) -> None:
        """Hand a file made in the seat's directory (its socket) to the seat's uid."""
        if self.host.uids is not None:
            os.chown(path, self.uid, self.uid)
        os.chmod(path, 0o600)

    def _bwrap_argv(self, argv: Sequence[str], binds: Sequence[Bind], env: Mapping[str, str],
                    cwd: str) -> list[str]:
        host = self.host
        limits = self.limits
        out = [
            host.bwrap, "--unshare-all", "--unshare-user", "--disable-userns",
            "--die-with-parent",
            "--new-session", "--uid", str(INNER_UID), "--gid", str(INNER_UID),
            "--hostname", "arena", "--clearenv",
        ]
        for top in ("usr",):
            out += ["--ro-bind", f"/{top}", f"/{top}"]
        for link in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
            path = Path("/") / link
            if path.is_symlink():
                out += ["--symlink", os.readlink(path), f"/{link}"]
            elif path.is_dir():
                out += ["--ro-bind", str(path), f"/{link}"]
        out += ["--ro-bind", str(host.etc_dir), "/etc"]
        if Path("/etc/ld.so.cache").exists():
            out += ["--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache"]
        out += ["--proc", "/proc", "--dev", "/dev"]
        out += ["--size", str(limits.tmp_mb << 20), "--perms", "1777", "--tmpfs", "/tmp"]
        out += ["--size", str(limits.home_mb << 20), "--perms", "0700", "--tmpfs", INNER_HOME]
        for bind in binds:
            out += ["--ro-bind", str(bind.source), bind.target]
        if self.seat_dir is not None:
            out += ["--ro-bind", str(self.seat_dir), SEAT_DIR]
        out += ["--remount-ro", "/"]
        for key, value in env.items():
            out += ["--setenv", key, value]
        out += ["--setenv", "HOME", INNER_HOME, "--setenv", "USER", "bot",
                "--setenv", "TMPDIR", "/tmp", "--chdir", cwd]
        if host.seccomp is not None:
            out += ["--seccomp", str(_SECCOMP_FD)]
        # The last step of the platform: say "ready", close that pipe, become the bot.
        out += ["/bin/sh", "-c", f'printf R >&{_READY_FD}; exec "$@" {_READY_FD}>&- '
                f"{_SECCOMP_FD}<&-", "sandbox", *argv]
        return out

    def _ulimits(self) -> str:
        """The shell's ``ulimit`` commands for the per-process limits (set by the gated
        shell itself: changing another uid's limits would need CAP_SYS_RESOURCE). A limit
        is never raised above the worker's own."""
        limits = self.limits

        def cap(res: int, value: int) -> int:
            hard = resource.getrlimit(res)[1]
            return value if hard == resource.RLIM_INFINITY else min(value, hard)

        cpu = cap(resource.RLIMIT_CPU, max(1, int(limits.cpu_s)) + 2)
        parts = [
            f"ulimit -S -t {max(1, cpu - 2)}", f"ulimit -H -t {cpu}",
            # bash counts file sizes in KiB
            f"ulimit -f {cap(resource.RLIMIT_FSIZE, limits.file_mb << 20) >> 10}",
            f"ulimit -n {cap(resource.RLIMIT_NOFILE, limits.nofile)}",
            "ulimit -c 0",
        ]
        if self.host.uids is not None:  # per uid: meaningful only with a uid per seat
            parts.append(f"ulimit -u {cap(resource.RLIMIT_NPROC, limits.pids)}")
        return " && ".join(parts)

    def spawn(
        self,
        argv: Sequence[str],
        *,
        binds: Sequence[Bind] = (),
        env: Mapping[str, str] | None = None,
        cwd: str = INNER_HOME,
        stdio: bool = False,
    ) -> None:
        """Start ``argv`` in the sandbox (call :meth:`prepare` first), on the running loop.

        ``stdio=True`` gives the bot pipes for stdin and stdout (:attr:`stdin`,
        :attr:`stdout`, for the text protocol) and keeps only stderr as its log;
        otherwise stdout and stderr both go to the log and stdin is /dev/null.
        """
        if self.seat_dir is None:
            self.prepare()
        for bind in binds:
            problem = self.host.check_readable(bind.source)
            if problem is not None:
                self.close()
                raise SandboxError(f"a seat cannot read what it needs: {problem}")
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._ready = loop.create_future()
        self._exited = loop.create_future()
        gate_r, gate_w = os.pipe2(os.O_CLOEXEC)
        ready_r, ready_w = os.pipe2(os.O_CLOEXEC)
        log_r, log_w = os.pipe2(os.O_CLOEXEC)
        child_only = [gate_r, ready_w, log_w]
        seccomp_fd = None
        if self.host.seccomp is not None:
            seccomp_fd = os.open(self.host.seccomp, os.O_RDONLY | os.O_CLOEXEC)
            child_only.append(seccomp_fd)
        stdin_r = stdout_w = None
        if stdio:
            stdin_r, self.stdin = os.pipe2(os.O_CLOEXEC)
            self.stdout, stdout_w = os.pipe2(os.O_CLOEXEC)
            child_only += [stdin_r, stdout_w]
        high = {fd: fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, _HIGH_FD) for fd in
                (gate_r, ready_w, *( [seccomp_fd] if seccomp_fd is not None else []))}
        script = f"read _ <&{high[gate_r]} || exit 70; {self._ulimits()} || exit 71; "
        script += f'exec "$@" {_GATE_FD}<&- '
        script += f"{_READY_FD}>&{high[ready_w]} "
        if seccomp_fd is not None:
            script += f"{_SECCOMP_FD}<&{high[seccomp_fd]} "
        script += " ".join(f"{fd}<&-" for fd in high.values())
        # bash, not sh: dash takes only one-digit fd numbers in redirections. The seat's
        # uid is taken by setpriv after the gate rather than by Popen: Popen would then
        # fork instead of vfork, running gRPC's fork handlers in the worker for nothing.
        become: list[str] = []
        if self.host.uids is not None:
            become = [self.host.setpriv, f"--reuid={self.uid}", f"--regid={self.uid}",
                      "--clear-groups", "--no-new-privs", "--"]
        argv_full = ["/bin/bash", "--noprofile", "--norc", "-c", script, "gate", *become,
                     *self._bwrap_argv(argv, binds, env or {}, cwd)]
        self.spawned_at = time.perf_counter()
        try:
            self.proc = subprocess.Popen(
                argv_full,
                stdin=stdin_r if stdin_r is not None else subprocess.DEVNULL,
                stdout=stdout_w if stdout_w is not None else log_w,
                stderr=log_w,
                pass_fds=tuple(high.values()),
                start_new_session=True,
                close_fds=True,
            )
        except OSError as exc:
            for fd in [*child_only, *high.values(), gate_w, ready_r, log_r]:
                with contextlib.suppress(OSError):
                    os.close(fd)
            self.close()
            raise SandboxError(f"cannot start the sandbox: {exc}") from exc
        finally:
            for fd in [*child_only, *high.values()]:
                with contextlib.suppress(OSError):
                    os.close(fd)
        pid = self.proc.pid
        try:
            assert self.cgroup is not None
            self.cgroup.place(pid)
            os.write(gate_w, b"go\n")
        except (OSError, CgroupError) as exc:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            self.proc.wait()
            for fd in (gate_w, ready_r, log_r):
                os.close(fd)
            self.close()
            raise SandboxError(f"cannot confine the sandbox: {exc}") from exc
        os.close(gate_w)
        for fd in (ready_r, log_r):
            os.set_blocking(fd, False)
        self._fds = [ready_r, log_r]
        self._ready_fd = ready_r
        self._log_fd: int | None = log_r
        loop.add_reader(ready_r, self._on_ready)
        loop.add_reader(log_r, self._on_output)
        self._pidfd = os.pidfd_open(pid)
        loop.add_reader(self._pidfd, self._on_exit)
        self._wall = loop.call_later(self.limits.wall_s, self._on_wall)

    # -- watching ---------------------------------------------------------------------

    def _on_ready(self) -> None:
        assert self._loop is not None and self._ready is not None
        try:
            data = os.read(self._ready_fd, 1)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        self._loop.remove_reader(self._ready_fd)
        if data == b"R":
            self.ready_at = time.perf_counter()
            self._hold_helpers()
        if not self._ready.done():
            self._ready.set_result(data == b"R")

    def _hold_helpers(self) -> None:
        """Keep a pidfd of each of bubblewrap's own processes: its pid-1 in the sandbox is
        left a zombie when bubblewrap exits, and this process (a child subreaper, see
        :mod:`arena.sandbox.host`) inherits it and must reap it. A pidfd names exactly that
        process, so a pid reused meanwhile is never reaped by mistake."""
        if self.cgroup is None or self.proc is None:
            return
        for pid in self.cgroup.procs():
            if pid == self.proc.pid:
                continue
            with contextlib.suppress(OSError):
                self._helpers.append(os.pidfd_open(pid))

    def _reap_helpers(self, timeout_s: float = 2.0) -> None:
        deadline = time.monotonic() + timeout_s
        for fd in self._helpers:
            while True:
                try:
                    done = os.waitid(os.P_PIDFD, fd, os.WEXITED | os.WNOHANG)
                except ChildProcessError:
                    break  # not this process's child (the host's init took it): not ours
                except OSError:
                    break
                if done is not None or time.monotonic() > deadline:
                    break
                time.sleep(0.002)
            os.close(fd)
        self._helpers = []

    def _reap_orphans(self, timeout_s: float = 1.0) -> None:
        """Reap the seat's processes that ended as this process's children: those the pid
        namespace's end hands to the nearest subreaper. A process of the seat's own uid is
        the seat's and nobody else waits for it."""
        if self.uid_lease is None:
            return
        uid = self.uid_lease.uid
        deadline = time.monotonic() + timeout_s
        while True:
            left = 0
            for pid in _children():
                state = _uid_and_state(pid)
                if state is None or state[0] != uid:
                    continue
                if state[1] == "Z":
                    with contextlib.suppress(ChildProcessError):
                        os.waitpid(pid, os.WNOHANG)
                else:
                    left += 1
            if not left or time.monotonic() > deadline:
                return
            time.sleep(0.005)

    def _on_output(self) -> None:
        fd = self._log_fd
        if fd is None:
            return
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._close_log()
            return
        if self.ready_at is None and len(self._early) < 4096:
            self._early += chunk[: 4096 - len(self._early)]
        self._output += len(chunk)
        room = (self.limits.log_kb << 10) - len(self._log)
        if room > 0:
            self._log += chunk[:room]
        if self._output > self.limits.output_kb << 10:
            self._output_limit = True
            self._close_log()

    def _close_log(self) -> None:
        fd, self._log_fd = self._log_fd, None
        if fd is not None and self._loop is not None:
            self._loop.remove_reader(fd)
            os.close(fd)
            self._fds.remove(fd)

    def _on_exit(self) -> None:
        assert self._loop is not None and self._exited is not None
        self._loop.remove_reader(self._pidfd)
        if self._ready is not None and not self._ready.done():
            self._on_ready()  # the byte may still be in the pipe
            if not self._ready.done():
                self._ready.set_result(False)
        if not self._exited.done():
            self._exited.set_result(None)

    def _on_wall(self) -> None:
        self._wall_hit = True
        if self._loop is not None:
            self._loop.create_task(self.stop())

    async def wait_ready(self) -> bool:
        """Whether the bot was started (False: the sandbox failed, or ended, before)."""
        assert self._ready is not None
        return await asyncio.shield(self._ready)

    @property
    def exited(self) -> asyncio.Future[None]:
        """Done when the sandbox's first process has ended (the bot exited, or was
        killed); the seat stops waiting for it then."""
        assert self._exited is not None
        return self._exited

    @property
    def running(self) -> bool:
        return self._exited is not None and not self._exited.done()

    @property
    def log(self) -> bytes:
        return bytes(self._log)

    # -- the end ----------------------------------------------------------------------

    async def stop(self) -> SandboxExit:
        """End every process of the seat, free what it held, and say how it ended.

        Safe to call more than once, and after the bot ended by itself."""
        if self._result is not None:
            return self._result
        if self._stopping:
            while self._result is None:
                await asyncio.sleep(0.01)
            return self._result
        self._stopping = True
        stopped = self.running
        killed_error: str | None = None
        if self.cgroup is not None and self.proc is not None:
            try:
                self.cgroup.kill()
            except CgroupError as exc:
                killed_error = str(exc)
        if self._exited is not None and self.proc is not None:
            if not self._exited.done():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.proc.pid, signal.SIGKILL)
                await self._exited
            self.proc.wait()
        # What is still in the output pipe belongs to the log.
        while self._log_fd is not None:
            before = self._output
            self._on_output()
            if self._output == before:
                break
        self._reap_helpers()
        self._reap_orphans()
        result = self._judge(stopped)
        if killed_error and not result.sandbox_error:
            result.sandbox_error = killed_error
        self._result = result
        self.close()
        return result

    def _judge(self, stopped: bool) -> SandboxExit:
        usage = self.cgroup.usage() if self.cgroup is not None else CgroupUsage()
        ready = self.ready_at is not None
        out = SandboxExit(
            ready=ready,
            start_s=None if self.ready_at is None else self.ready_at - self.spawned_at,
            usage=usage,
            log=bytes(self._log),
            output_limit=self._output_limit,
            wall_limit=self._wall_hit,
        )
        if not ready:
            if self.proc is None:
                out.sandbox_error = "it was never started"
            else:
                text = bytes(self._early).decode("utf-8", "replace").strip()
                out.sandbox_error = text.splitlines()[-1] if text else (
                    f"the sandbox ended with code {self.proc.returncode} before the bot started"
                )
                # Stopped by us only if our kill ended it: a sandbox that failed on its own
                # may close its ready pipe before its exit is seen, and its error is the
                # one to tell.
                if stopped and self.proc.returncode == -signal.SIGKILL:
                    out.sandbox_error = "stopped before the bot was started"
            return out
        code = self.proc.returncode if self.proc is not None else None
        if stopped or code is None:
            out.stopped = True
        elif code < 0:
            out.signal = -code  # the sandbox itself was killed (by the wall limit, by us)
        elif code > 128:
            out.signal = code - 128  # bubblewrap reports the bot's death by signal N so
        else:
            out.exit_code = code
        out.memory_limit = usage.oom_kills > 0
        out.cpu_limit = out.signal == signal.SIGXCPU or (
            out.signal == signal.SIGKILL
            and usage.cpu_s is not None
            and usage.cpu_s >= self.limits.cpu_s
        )
        if self._wall_hit:
            out.stopped = False
        return out

    def close(self) -> None:
        """Release the uid, the cgroup and the seat's directory (after :meth:`stop`, or
        when the set-up failed half way)."""
        if self._closed:
            return
        self._closed = True
        if self._wall is not None:
            self._wall.cancel()
        loop = self._loop
        for fd in list(self._fds):
            if loop is not None:
                with contextlib.suppress(Exception):
                    loop.remove_reader(fd)
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds = []
        self._log_fd = None
        pidfd = getattr(self, "_pidfd", None)
        if pidfd is not None:
            if loop is not None:
                with contextlib.suppress(Exception):
                    loop.remove_reader(pidfd)
            with contextlib.suppress(OSError):
                os.close(pidfd)
        for own in (self.stdin, self.stdout):
            if own is not None:
                with contextlib.suppress(OSError):
                    os.close(own)
        self.stdin = self.stdout = None
        if self.cgroup is not None:
            with contextlib.suppress(CgroupError):
                self.cgroup.remove()
            self.cgroup = None
        if self.seat_dir is not None:
            shutil.rmtree(self.seat_dir, ignore_errors=True)
            self.seat_dir = None
        if self.uid_lease is not None:
            self.uid_lease.release()
            self.uid_lease = None


def _children() -> list[int]:
    """This process's children (of every thread), from /proc."""
    out: list[int] = []
    with contextlib.suppress(OSError):
        for tid in os.listdir("/proc/self/task"):
            with contextlib.suppress(OSError), open(f"/proc/self/task/{tid}/children") as f:
                out += [int(x) for x in f.read().split()]
    return out


def _uid_and_state(pid: int) -> tuple[int, str] | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            text = f.read()
    except OSError:
        return None
    uid = state = None
    for line in text.splitlines():
        if line.startswith("State:"):
            state = line.split()[1]
        elif line.startswith("Uid:"):
            uid = int(line.split()[1])
            break
    if uid is None or state is None:
        return None
    return uid, state
