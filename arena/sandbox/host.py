"""What this host offers sandboxes, found once per process: bubblewrap, cgroups, seat uids.

``SandboxHost.get()`` checks everything a sandbox needs before the first one starts, and
the same check is what ``arena doctor`` prints: which isolation is in force (namespaces,
cgroup mechanism, a uid per seat, the seccomp filter), and what is missing and why. A host
that cannot isolate a bot refuses to run one (:class:`SandboxUnavailable`); it never runs
it with less.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import itertools
import os
import shutil
import stat
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from arena.sandbox.cgroups import CgroupError, CgroupMechanism, detect

STATE_ENV = "ARENA_SANDBOX_DIR"
UIDS_ENV = "ARENA_SANDBOX_UIDS"
BWRAP_ENV = "ARENA_BWRAP"
#: Seat uids: a range no person's account uses; one per seat running at once on the host.
DEFAULT_UIDS = (3_100_000, 1024)
#: The bot's user inside the sandbox (its own user namespace maps it to the seat's uid).
INNER_UID = 1000
INNER_HOME = "/home/bot"


class SandboxUnavailable(RuntimeError):
    """This host cannot run sandboxes (and says why): the platform's fault, never a bot's."""


class SandboxError(RuntimeError):
    """A sandbox could not be set up or ended badly through no fault of the bot."""


def host_dir(env: str, as_root: str, as_user: Callable[[], Path]) -> Path:
    """The directory of the arena's files on this host: the one ``env`` names, else the
    system's ``as_root`` when the arena runs as root (and seats run as uids of their own),
    else one of the user's."""
    named = os.environ.get(env)
    if named:
        return Path(named)
    if os.geteuid() == 0:
        return Path(as_root)
    return as_user()


def _state_dir() -> Path:
    return host_dir(STATE_ENV, "/run/arena-sandbox",
                    lambda: Path(f"/tmp/arena-sandbox-{os.geteuid()}"))


def _uid_range() -> tuple[int, int]:
    raw = os.environ.get(UIDS_ENV, "")
    if not raw:
        return DEFAULT_UIDS
    try:
        first, _, last = raw.partition("-")
        low, high = int(first), int(last)
    except ValueError:
        raise SandboxUnavailable(f"{UIDS_ENV} must be FIRST-LAST (uids), got {raw!r}") from None
    if not 0 < low <= high:
        raise SandboxUnavailable(f"{UIDS_ENV}: bad range {raw!r}")
    return low, high - low + 1


class UidLease:
    """A seat uid held for one sandbox (a lock file, released at once if the process dies)."""

    def __init__(self, uid: int, fd: int) -> None:
        self.uid = uid
        self._fd: int | None = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


class UidPool:
    """Hands each running seat a uid of its own, across every process on the host.

    A uid is held by an exclusive ``flock`` on its lock file: the kernel drops it when the
    holder exits, however it exits, so a crashed worker never strands a uid.
    """

    def __init__(self, directory: Path, first: int, count: int) -> None:
        self.directory = directory
        self.first = first
        self.count = count
        self._next = itertools.count(os.getpid() * 7919)
        self._lock = threading.Lock()

    def acquire(self) -> UidLease:
        with self._lock:
            start = next(self._next) % self.count
        for i in range(self.count):
            uid = self.first + (start + i) % self.count
            fd = os.open(self.directory / f"{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC,
                         0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                    continue
                raise
            return UidLease(uid, fd)
        raise SandboxError(f"all {self.count} seat uids are in use on this host")


#: Files of the sandbox's /etc: no account of the host, only the bot's own.
_ETC_FILES = {
    "passwd": f"bot:x:{INNER_UID}:{INNER_UID}:bot:{INNER_HOME}:/bin/sh\n",
    "group": f"bot:x:{INNER_UID}:\n",
    "hostname": "arena\n",
    "hosts": "127.0.0.1 localhost\n::1 localhost\n",
    "nsswitch.conf": "passwd: files\ngroup: files\nhosts: files\n",
}


@dataclass
class SandboxHost:
    """The sandboxing of this process's host, checked and ready."""

    bwrap: str
    setpriv: str
    cgroups: CgroupMechanism
    state_dir: Path
    #: None when this process is not root: every seat then runs as the worker's own uid
    #: (still in its own user namespace, without the uid of its own).
    uids: UidPool | None
    seccomp: Path | None
    seccomp_note: str
    etc_dir: Path
    seats_dir: Path
    notes: list[str] = field(default_factory=list)

    _instance: SandboxHost | None = None
    _failure: str | None = None
    _lock = threading.Lock()

    @classmethod
    def get(cls) -> SandboxHost:
        """This process's host, found at the first call (raises SandboxUnavailable)."""
        with cls._lock:
            if cls._instance is not None and cls._instance._pid == os.getpid():
                return cls._instance
            host = cls._find()
            cls._instance = host
            return host

    @classmethod
    def reset(cls) -> None:
        """Forget what was found (tests change the environment between checks)."""
        with cls._lock:
            cls._instance = None

    def __post_init__(self) -> None:
        self._pid = os.getpid()

    @classmethod
    def _find(cls) -> SandboxHost:
        from arena.sandbox import seccomp

        if not os.path.exists("/proc/self/ns/user"):
            raise SandboxUnavailable("this kernel has no user namespaces: sandboxes need Linux")
        bwrap = os.environ.get(BWRAP_ENV) or shutil.which("bwrap")
        if not bwrap:
            raise SandboxUnavailable(
                "bubblewrap is not installed (Debian package 'bubblewrap'; scripts/setup.sh "
                "installs it)"
            )
        setpriv = shutil.which("setpriv") or "/usr/bin/setpriv"
        if os.geteuid() == 0 and not os.path.exists(setpriv):
            raise SandboxUnavailable("setpriv is missing (Debian package util-linux)")
        try:
            cgroups = detect()
        except CgroupError as exc:
            raise SandboxUnavailable(str(exc)) from exc
        state = _state_dir()
        root = os.geteuid() == 0
        try:
            state.mkdir(parents=True, exist_ok=True)
            os.chmod(state, 0o711)
            seats = state / "seats"
            seats.mkdir(exist_ok=True)
            os.chmod(seats, 0o711)
            etc = state / "etc"
            etc.mkdir(exist_ok=True)
            for name, text in _ETC_FILES.items():
                write_if_changed(etc / name, text.encode())
            # A mount point for the host's loader cache (it speeds up every program start).
            (etc / "ld.so.cache").touch(exist_ok=True)
            os.chmod(etc, 0o755)
            uids: UidPool | None = None
            if root:
                first, count = _uid_range()
                locks = state / "uids"
                locks.mkdir(exist_ok=True)
                os.chmod(locks, 0o700)
                uids = UidPool(locks, first, count)
            bpf, note = seccomp.build()
            filter_path = None
            if bpf is not None:
                filter_path = state / "seccomp.bpf"
                write_if_changed(filter_path, bpf)
        except OSError as exc:
            raise SandboxUnavailable(
                f"cannot prepare the sandbox directory {state}: {exc}"
            ) from exc
        _become_subreaper()
        # What a worker killed mid-match left behind: its seats' cgroups and directories.
        cgroups.sweep()
        with contextlib.suppress(OSError):
            for entry in (state / "seats").iterdir():
                if _dead_owner(entry.name):
                    shutil.rmtree(entry, ignore_errors=True)
        host = cls(
            bwrap=bwrap, setpriv=setpriv, cgroups=cgroups, state_dir=state, uids=uids,
            seccomp=filter_path, seccomp_note=note, etc_dir=etc, seats_dir=seats,
        )
        if not root:
            host.notes.append("not root: every seat runs as this process's uid")
        return host

    def report(self) -> list[tuple[str, str]]:
        """What isolates a seat on this host, one line per mechanism (``arena doctor``)."""
        uid = (
            f"yes, from {self.uids.first} to {self.uids.first + self.uids.count - 1}"
            if self.uids is not None
            else "no (not root): seats run as this process's uid"
        )
        return [
            ("sandbox", f"bubblewrap ({self.bwrap})"),
            ("namespaces", "user, pid, network (loopback only), mount, ipc, uts, cgroup"),
            ("cgroups", self.cgroups.describe()),
            ("uid per seat", uid),
            ("seccomp", self.seccomp_note),
            ("state", str(self.state_dir)),
        ]

    def check_readable(self, path: Path) -> str | None:
        """Why a seat's uid could not read ``path`` through its parents, if it could not:
        a runtime or a bot cache in a private directory (such as /root) is a host setup
        mistake, said before any bot is blamed."""
        if self.uids is None:
            return None
        current = Path(path).resolve()
        for part in [*reversed(current.parents), current]:
            try:
                mode = os.stat(part).st_mode
            except OSError as exc:
                return f"{part}: {exc.strerror}"
            need = stat.S_IXOTH if stat.S_ISDIR(mode) else stat.S_IROTH
            if part == current and stat.S_ISDIR(mode):
                need |= stat.S_IROTH
            if not mode & need:
                return f"{part} is not readable by other users (the seats' uids)"
        return None


def write_if_changed(path: Path, data: bytes) -> None:
    """Replace ``path`` atomically, readable by every seat's uid, unless it already holds
    ``data``. Workers starting together on one host prepare the same state directory at
    once, so each writes its own temporary file: with a shared name, one worker's rename
    took the file from under the other's, which then refused to start."""
    with contextlib.suppress(FileNotFoundError):
        if path.read_bytes() == data:
            return
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


#: prctl option: orphaned descendants are re-parented to this process, not to init.
_PR_SET_CHILD_SUBREAPER = 36


def _become_subreaper() -> None:
    """Make this process the reaper of its sandboxes' orphans.

    bubblewrap's process inside the sandbox outlives its parent by a moment when the
    sandbox ends; re-parented to the host's init it stays a zombie on a host whose init
    does not reap (some container and VM inits do not). As a child subreaper this process
    inherits it, and :class:`~arena.sandbox.process.Sandbox` reaps it by its pidfd.
    """
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _dead_owner(name: str) -> bool:
    from arena.sandbox.cgroups import _owner_gone

    return _owner_gone(name)
