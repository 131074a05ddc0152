"""What one sandboxed seat may use: every limit explicit, with the status hitting it earns.

The defaults fit a bot of the Python or Node runtime (an interpreter, gRPC and numpy take
about 100 MB) with room to think, and keep a hostile bot from hurting the matches that run
beside it on the same worker: a fork bomb stops at ``pids``, a memory hog at ``memory_mb``
(the kernel's OOM killer, within the seat's cgroup only), endless computing at ``cpus`` of a
core and ``cpu_s`` seconds of CPU per process, a flood of output at ``output_kb``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any


@dataclass(frozen=True)
class Limits:
    """Limits of one seat's sandbox (all processes of the seat together, unless noted)."""

    #: Memory of all its processes, tmpfs files included (cgroup); over it: ``memory limit``.
    memory_mb: int = 512
    #: Processes and threads at once (cgroup); a fork past it fails with EAGAIN.
    pids: int = 128
    #: Share of CPU, in cores (cgroup quota): a busy loop cannot starve other seats.
    cpus: float = 1.0
    #: CPU seconds per process (RLIMIT_CPU); past it SIGXCPU, then SIGKILL: ``CPU limit``.
    cpu_s: int = 600
    #: Largest file it may write (RLIMIT_FSIZE), in MiB.
    file_mb: int = 16
    #: Its private writable home directory and its /tmp (tmpfs, charged to its memory).
    home_mb: int = 32
    tmp_mb: int = 32
    #: Open files per process (RLIMIT_NOFILE).
    nofile: int = 256
    #: Output (stdout and stderr) read before its pipe is closed: writing more fails.
    output_kb: int = 1024
    #: Output kept as the seat's log, for its author.
    log_kb: int = 64
    #: Wall time of the whole sandbox, start to end; past it the seat is stopped: ``timeout``.
    wall_s: float = 3600.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Limits:
        if not data:
            return cls()
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def with_(self, **changes: Any) -> Limits:
        return replace(self, **changes)
