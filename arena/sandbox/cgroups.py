"""Control groups for sandboxed seats: one cgroup per seat, limits on it, and a clean end.

A seat's processes (the sandbox, the bot and anything it forks) all live in the seat's own
cgroup, which gives three things no per-process limit gives: a memory limit over all of
them (the OOM killer acts inside the cgroup only, and says so in its counters), a limit on
processes and threads (a fork bomb stops there), a CPU quota; and a list of every process
of the seat, so that all of them end with the match, double-forked daemons included.

Two mechanisms, one interface, chosen once when the process starts (:func:`detect`):

* **cgroup v2** with a delegated subtree, as production hosts have it (systemd
  ``Delegate=yes`` with ``DelegateSubgroup=``, or a subtree named by
  ``ARENA_SANDBOX_CGROUP``): one directory per seat, ``memory.max``, ``pids.max``,
  ``cpu.max``, ``cgroup.kill``;
* **cgroup v1**, with the ``memory``, ``pids`` and ``cpu`` hierarchies writable, as on
  hosts whose v2 hierarchy has no controllers: one directory per seat in each.

Without either, hosted bots cannot be run safely and :func:`detect` says why.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import secrets
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from arena.sandbox.limits import Limits

CGROUP_ENV = "ARENA_SANDBOX_CGROUP"
#: Where the cgroup file systems are mounted on Linux.
CGROUP_MOUNT = Path("/sys/fs/cgroup")
#: The directory made under the worker's own cgroup (v1) or the delegated one (v2).
PARENT_NAME = "arena-sandbox"
#: The controllers a seat needs, whichever the mechanism.
CONTROLLERS = ("memory", "pids", "cpu")
CPU_PERIOD_US = 100_000

_names = itertools.count(1)


class CgroupError(RuntimeError):
    """No usable cgroup mechanism, or one that failed: never the bot's fault."""


@dataclass(frozen=True)
class CgroupUsage:
    """What the kernel counted for one seat's cgroup."""

    #: Processes the OOM killer ended because the seat was over its memory limit.
    oom_kills: int = 0
    #: Forks refused because the seat was at its process limit.
    pids_refused: int = 0
    #: Most memory in use at once, in bytes (0 when the kernel does not say).
    memory_peak: int = 0
    #: CPU time of all its processes, in seconds (None when the kernel does not say).
    cpu_s: float | None = None


def _write(path: Path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def _read(path: Path) -> str:
    with open(path) as f:
        return f.read()


def _keyed(path: Path) -> dict[str, int]:
    """A flat-keyed cgroup file (``key value`` lines) as a dictionary; {} when absent."""
    out: dict[str, int] = {}
    try:
        text = _read(path)
    except OSError:
        return out
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        with contextlib.suppress(ValueError):
            out[key] = int(value.split()[0])
    return out


def _int_file(path: Path) -> int:
    try:
        return int(_read(path).split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def _pids(path: Path) -> list[int]:
    try:
        return [int(x) for x in _read(path).split()]
    except FileNotFoundError:
        return []


def _rmdir(path: Path, deadline: float) -> None:
    """Remove an empty cgroup, waiting out the moment the kernel still counts a process
    that was just killed (EBUSY)."""
    while True:
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                raise CgroupError(f"cannot remove cgroup {path}: {exc}") from exc
            time.sleep(0.005)


def _kill_all(procs: Path, deadline: float) -> None:
    """SIGKILL every process listed in ``procs`` until none is left (one may fork while
    the others are being killed, so the list is read again)."""
    while True:
        pids = _pids(procs)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if time.monotonic() > deadline:
            raise CgroupError(f"processes {pids} of {procs.parent} did not end")
        time.sleep(0.002)


def own_cgroup(controller: str | None, text: str | None = None) -> str | None:
    """This process's cgroup path in ``controller``'s v1 hierarchy, or in the v2 one
    (``controller`` None), from /proc/self/cgroup."""
    if text is None:
        try:
            text = _read(Path("/proc/self/cgroup"))
        except OSError:
            return None
    for line in text.splitlines():
        _, names, path = line.split(":", 2)
        if controller is None:
            if names == "":
                return path
        elif controller in names.split(","):
            return path
    return None


class SeatCgroup:
    """One seat's cgroup (in one or several hierarchies)."""

    def __init__(self, name: str, dirs: dict[str, Path]) -> None:
        self.name = name
        #: Controller (or "" for a v2 cgroup) -> the seat's directory.
        self.dirs = dirs

    def place(self, pid: int) -> None:
        """Move a process (before it runs anything of the bot) into the seat's cgroup."""
        for path in self.dirs.values():
            _write(path / "cgroup.procs", str(pid))

    def procs(self) -> list[int]:
        raise NotImplementedError

    def usage(self) -> CgroupUsage:
        raise NotImplementedError

    def kill(self, timeout_s: float = 5.0) -> None:
        """End every process of the seat, and wait until the kernel has them all."""
        raise NotImplementedError

    def remove(self, timeout_s: float = 5.0) -> None:
        """Kill what is left and remove the cgroup."""
        self.kill(timeout_s)
        deadline = time.monotonic() + timeout_s
        for path in self.dirs.values():
            _rmdir(path, deadline)


def _owner_gone(name: str) -> bool:
    """Whether the worker that made seat cgroup ``name`` (``LABEL-PID-N-HEX``) is gone."""
    parts = name.rsplit("-", 3)
    if len(parts) != 4 or not parts[1].isdigit():
        return False
    try:
        os.kill(int(parts[1]), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


class CgroupMechanism:
    """How seats get their cgroups on this host; one is chosen per process."""

    name = "cgroup"

    def sweep(self) -> int:
        """Remove the seat cgroups of workers that died without cleaning up (killed with
        their matches), ending any process left in them; how many were removed."""
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def create(self, limits: Limits, label: str = "seat") -> SeatCgroup:
        raise NotImplementedError

    @staticmethod
    def seat_name(label: str) -> str:
        return f"{label}-{os.getpid()}-{next(_names)}-{secrets.token_hex(3)}"


# ------------------------------------------------------------------------------ v1


class _V1Seat(SeatCgroup):
    def procs(self) -> list[int]:
        return _pids(self.dirs["pids"] / "cgroup.procs")

    def usage(self) -> CgroupUsage:
        memory = self.dirs["memory"]
        cpu_s = None
        acct = self.dirs.get("cpuacct")
        if acct is not None:
            ns = _int_file(acct / "cpuacct.usage")
            cpu_s = ns / 1e9
        return CgroupUsage(
            oom_kills=_keyed(memory / "memory.oom_control").get("oom_kill", 0),
            pids_refused=_keyed(self.dirs["pids"] / "pids.events").get("max", 0),
            memory_peak=_int_file(memory / "memory.max_usage_in_bytes"),
            cpu_s=cpu_s,
        )

    def kill(self, timeout_s: float = 5.0) -> None:
        deadline = time.monotonic() + timeout_s
        # Every controller lists the same processes; the pids one is read last, as it
        # also counts a process that is still exiting.
        for controller in ("memory", "cpu", "pids"):
            _kill_all(self.dirs[controller] / "cgroup.procs", deadline)


class CgroupV1(CgroupMechanism):
    """One directory per seat in each of the memory, pids and cpu hierarchies (and
    cpuacct, when mounted, for the CPU time), under this process's own cgroup."""

    name = "cgroup v1"

    def __init__(self, parents: dict[str, Path]) -> None:
        self.parents = parents

    @classmethod
    def find(cls, mount: Path = CGROUP_MOUNT) -> CgroupV1:
        """The v1 hierarchies of this host, checked writable; CgroupError says what lacks."""
        parents: dict[str, Path] = {}
        wanted = (*CONTROLLERS, "cpuacct")
        for controller in wanted:
            root = _v1_mount(mount, controller)
            if root is None:
                if controller == "cpuacct":
                    continue
                raise CgroupError(f"no cgroup v1 hierarchy with the {controller} controller")
            own = own_cgroup(controller) or "/"
            parent = root / own.lstrip("/") / PARENT_NAME
            try:
                parent.mkdir(exist_ok=True)
            except OSError as exc:
                if controller == "cpuacct":
                    continue
                raise CgroupError(f"cannot create cgroup {parent}: {exc.strerror}") from exc
            parents[controller] = parent
        return cls(parents)

    def sweep(self) -> int:
        names: set[str] = set()
        for parent in self.parents.values():
            with contextlib.suppress(OSError):
                names.update(p.name for p in parent.iterdir() if p.is_dir())
        removed = 0
        for name in sorted(n for n in names if _owner_gone(n)):
            dirs = {c: p / name for c, p in self.parents.items() if (p / name).is_dir()}
            if "pids" in dirs and "memory" in dirs and "cpu" in dirs:
                with contextlib.suppress(CgroupError):
                    _V1Seat(name, dirs).remove(timeout_s=2.0)
                    removed += 1
            else:
                for path in dirs.values():
                    with contextlib.suppress(CgroupError):
                        _kill_all(path / "cgroup.procs", time.monotonic() + 2.0)
                        _rmdir(path, time.monotonic() + 2.0)
        return removed

    def describe(self) -> str:
        where = ", ".join(str(p) for c, p in self.parents.items() if c in CONTROLLERS)
        return f"cgroup v1 (memory, pids, cpu under {where})"

    def create(self, limits: Limits, label: str = "seat") -> SeatCgroup:
        name = self.seat_name(label)
        dirs: dict[str, Path] = {}
        try:
            for controller, parent in self.parents.items():
                path = parent / name
                path.mkdir()
                dirs[controller] = path
            mem = dirs["memory"]
            limit = str(limits.memory_mb << 20)
            _write(mem / "memory.limit_in_bytes", limit)
            if (mem / "memory.memsw.limit_in_bytes").exists():
                with contextlib.suppress(OSError):  # swap accounting may be off
                    _write(mem / "memory.memsw.limit_in_bytes", limit)
            _write(dirs["pids"] / "pids.max", str(limits.pids))
            _write(dirs["cpu"] / "cpu.cfs_period_us", str(CPU_PERIOD_US))
            quota = max(1000, int(limits.cpus * CPU_PERIOD_US))
            _write(dirs["cpu"] / "cpu.cfs_quota_us", str(quota))
        except OSError as exc:
            seat = _V1Seat(name, dirs)
            with contextlib.suppress(CgroupError):
                seat.remove()
            raise CgroupError(f"cannot set up the seat's cgroup {name}: {exc}") from exc
        return _V1Seat(name, dirs)


def _v1_mount(mount: Path, controller: str) -> Path | None:
    """The mount point of the v1 hierarchy holding ``controller`` (``cpu`` may share one
    with ``cpuacct``), found in /proc/self/mountinfo."""
    try:
        text = _read(Path("/proc/self/mountinfo"))
    except OSError:
        return None
    for line in text.splitlines():
        left, _, right = line.partition(" - ")
        parts = right.split()
        if len(parts) < 3 or parts[0] != "cgroup":
            continue
        if controller in parts[2].split(","):
            point = Path(left.split()[4])
            if point.is_relative_to(mount):
                return point
    return None


# ------------------------------------------------------------------------------ v2


class _V2Seat(SeatCgroup):
    def __init__(self, name: str, path: Path) -> None:
        super().__init__(name, {"": path})
        self.path = path

    def procs(self) -> list[int]:
        return _pids(self.path / "cgroup.procs")

    def usage(self) -> CgroupUsage:
        cpu = _keyed(self.path / "cpu.stat").get("usage_usec")
        return CgroupUsage(
            oom_kills=_keyed(self.path / "memory.events").get("oom_kill", 0),
            pids_refused=_keyed(self.path / "pids.events").get("max", 0),
            memory_peak=_int_file(self.path / "memory.peak"),
            cpu_s=None if cpu is None else cpu / 1e6,
        )

    def kill(self, timeout_s: float = 5.0) -> None:
        deadline = time.monotonic() + timeout_s
        kill_file = self.path / "cgroup.kill"
        if kill_file.exists():
            with contextlib.suppress(FileNotFoundError):
                _write(kill_file, "1")
        else:  # kernels before 5.14
            _kill_all(self.path / "cgroup.procs", deadline)
        # cgroup.kill returns before the processes are gone: wait until it is empty.
        while _keyed(self.path / "cgroup.events").get("populated", 0):
            if time.monotonic() > deadline:
                raise CgroupError(f"processes of {self.path} did not end")
            time.sleep(0.002)


class CgroupV2(CgroupMechanism):
    """One directory per seat under a delegated cgroup v2 subtree."""

    name = "cgroup v2"

    def __init__(self, root: Path, *, enforce: bool = True) -> None:
        self.root = root
        #: False only to exercise the mechanics on a hierarchy without controllers (the
        #: tests on a host whose v2 hierarchy has none): the limits are then not set.
        self.enforce = enforce

    @classmethod
    def at(cls, root: Path) -> CgroupV2:
        """A v2 subtree that has (or may enable) the memory, pids and cpu controllers for
        its children; CgroupError says what lacks."""
        if not (root / "cgroup.controllers").exists():
            raise CgroupError(f"{root} is not a cgroup v2 directory")
        available = set(_read(root / "cgroup.controllers").split())
        missing = [c for c in CONTROLLERS if c not in available]
        if missing:
            raise CgroupError(
                f"cgroup v2 at {root} offers no {', '.join(missing)} controller "
                f"(it has: {' '.join(sorted(available)) or 'none'})"
            )
        enabled = set(_read(root / "cgroup.subtree_control").split())
        if not set(CONTROLLERS) <= enabled:
            try:
                _write(root / "cgroup.subtree_control", " ".join(f"+{c}" for c in CONTROLLERS))
            except OSError as exc:
                raise CgroupError(
                    f"cannot enable memory, pids and cpu for the children of {root}: "
                    f"{exc.strerror} (the subtree must be delegated, and hold no process)"
                ) from exc
        return cls(root)

    @classmethod
    def delegated(cls, mount: Path = CGROUP_MOUNT) -> CgroupV2:
        """The subtree named by ``ARENA_SANDBOX_CGROUP``, or else a child of the parent of
        this process's cgroup (systemd ``Delegate=yes`` with ``DelegateSubgroup=``)."""
        named = os.environ.get(CGROUP_ENV, "")
        v2_mount = _v2_mount(mount)
        if named:
            root = Path(named)
            if not root.is_absolute() and v2_mount is not None:
                root = v2_mount / named
            root.mkdir(exist_ok=True)
            return cls.at(root)
        if v2_mount is None:
            raise CgroupError("no cgroup v2 hierarchy is mounted")
        own = own_cgroup(None)
        if own is None or own == "/":
            raise CgroupError("this process is in the root cgroup v2: no delegated subtree")
        # The process runs in a leaf of the delegated subtree (a cgroup holding processes
        # may not hand controllers to its children): the seats go beside that leaf.
        parent = (v2_mount / own.lstrip("/")).parent
        cls.at(parent)
        root = parent / PARENT_NAME
        try:
            root.mkdir(exist_ok=True)
        except OSError as exc:
            raise CgroupError(f"cannot create cgroup {root}: {exc.strerror}") from exc
        return cls.at(root)

    def sweep(self) -> int:
        removed = 0
        with contextlib.suppress(OSError):
            for path in sorted(self.root.iterdir()):
                if path.is_dir() and _owner_gone(path.name):
                    with contextlib.suppress(CgroupError):
                        _V2Seat(path.name, path).remove(timeout_s=2.0)
                        removed += 1
        return removed

    def describe(self) -> str:
        return f"cgroup v2 (memory, pids, cpu under {self.root})"

    def create(self, limits: Limits, label: str = "seat") -> SeatCgroup:
        name = self.seat_name(label)
        path = self.root / name
        try:
            path.mkdir()
        except OSError as exc:
            raise CgroupError(f"cannot create the seat's cgroup {path}: {exc}") from exc
        seat = _V2Seat(name, path)
        if not self.enforce:
            return seat
        try:
            _write(path / "memory.max", str(limits.memory_mb << 20))
            if (path / "memory.swap.max").exists():
                _write(path / "memory.swap.max", "0")
            _write(path / "pids.max", str(limits.pids))
            quota = max(1000, int(limits.cpus * CPU_PERIOD_US))
            _write(path / "cpu.max", f"{quota} {CPU_PERIOD_US}")
        except OSError as exc:
            with contextlib.suppress(CgroupError):
                seat.remove()
            raise CgroupError(f"cannot set the limits of cgroup {path}: {exc}") from exc
        return seat


def _v2_mount(mount: Path) -> Path | None:
    """Where the cgroup v2 hierarchy is mounted: /sys/fs/cgroup itself, or (hybrid
    hosts) /sys/fs/cgroup/unified."""
    for candidate in (mount, mount / "unified"):
        if (candidate / "cgroup.controllers").exists():
            return candidate
    return None


def detect() -> CgroupMechanism:
    """The mechanism this host offers: a delegated cgroup v2 subtree, else cgroup v1.

    Raises CgroupError with the reasons both were refused.
    """
    reasons: list[str] = []
    try:
        return CgroupV2.delegated()
    except (CgroupError, OSError) as exc:
        if os.environ.get(CGROUP_ENV):
            raise CgroupError(f"{CGROUP_ENV}: {exc}") from exc
        reasons.append(f"v2: {exc}")
    try:
        return CgroupV1.find()
    except (CgroupError, OSError) as exc:
        reasons.append(f"v1: {exc}")
    raise CgroupError("no usable cgroup mechanism (" + "; ".join(reasons) + ")")
