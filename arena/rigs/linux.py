"""The Linux calls a rig needs that Python 3.11 does not wrap: namespaces and mounts.

``setns``, ``unshare`` and ``mount`` come from the C library through :mod:`ctypes`
(``os.setns`` and ``os.unshare`` arrive only in Python 3.12), and network namespaces are
made and removed with the ``ip`` command (iproute2), which also leaves them where
``ip netns`` and every other tool find them (``/run/netns/NAME``).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18

NETNS_DIR = Path("/run/netns")

_libc = ctypes.CDLL(None, use_errno=True)


class RigError(RuntimeError):
    """The machine cannot host a rig (not root, no iproute2), or a step of it failed."""


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def setns(fd: int, nstype: int) -> None:
    """Move the calling thread into the namespace open at ``fd``."""
    _check(_libc.setns(fd, nstype), "setns")


def unshare(flags: int) -> None:
    """Give the calling process namespaces of its own (``CLONE_NEW*`` flags)."""
    _check(_libc.unshare(flags), "unshare")


def mount(source: str | None, target: str, fstype: str | None, flags: int = 0,
          data: str | None = None) -> None:
    def b(text: str | None) -> bytes | None:
        return None if text is None else os.fsencode(text)

    _check(
        _libc.mount(b(source), b(target), b(fstype), ctypes.c_ulong(flags), b(data)),
        f"mount {source or fstype} on {target}",
    )


def umount(target: str) -> None:
    """Detach the mount at ``target`` (lazily: nothing may still use it)."""
    _check(_libc.umount2(os.fsencode(target), 2), f"umount {target}")


def sethostname(name: str) -> None:
    raw = name.encode()
    _check(_libc.sethostname(raw, len(raw)), "sethostname")


def require_root() -> None:
    """A clear refusal where a rig cannot be built."""
    if os.geteuid() != 0:
        raise RigError("the multi-host rig needs root (network namespaces and mounts)")
    if shutil.which("ip") is None:
        raise RigError("the multi-host rig needs the ip command (Debian: apt-get install iproute2)")


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``ip ARGS``; a failure is a :class:`RigError` with ip's own message."""
    res = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and res.returncode != 0:
        raise RigError(f"ip {' '.join(args)}: {res.stderr.strip() or res.stdout.strip()}")
    return res


def netns_path(name: str) -> Path:
    return NETNS_DIR / name


def netns_inode(name: str) -> int:
    return os.stat(netns_path(name)).st_ino


def netns_names() -> list[str]:
    try:
        return sorted(p.name for p in NETNS_DIR.iterdir())
    except FileNotFoundError:
        return []


def pids_in_netns(name: str) -> list[int]:
    """Every process whose network namespace is ``name`` (what a host "runs")."""
    try:
        inode = netns_inode(name)
    except FileNotFoundError:
        return []
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.stat(entry / "ns" / "net").st_ino == inode:
                found.append(int(entry.name))
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return found


def cpu_seconds(pids: list[int]) -> float:
    """CPU time (user and system) the processes used so far, with their children already
    waited for."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        # utime, stime, cutime, cstime: fields 14-17 of stat (11-14 after the name).
        total += sum(int(x) for x in fields[11:15])
    return total / tick


def kill_netns_processes(name: str, sig: int = signal.SIGKILL, timeout: float = 10.0) -> int:
    """Signal every process in namespace ``name`` until none is left (processes may fork
    meanwhile); how many were signalled."""
    signalled: set[int] = set()
    deadline = time.monotonic() + timeout
    while True:
        pids = [p for p in pids_in_netns(name) if p != os.getpid()]
        if not pids:
            return len(signalled)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
            signalled.add(pid)
        if time.monotonic() > deadline:
            raise RigError(f"processes {pids} of {name} outlived {sig!s} for {timeout:.0f} s")
        time.sleep(0.05)
        sig = signal.SIGKILL
