"""Sandboxes for hosted bots: bubblewrap namespaces, a cgroup and a uid per seat, seccomp.

:class:`~arena.sandbox.process.Sandbox` runs one seat's process tree under
:class:`~arena.sandbox.limits.Limits`; :class:`~arena.sandbox.host.SandboxHost` says what
this host offers (``arena doctor``).
"""

from arena.sandbox.host import SandboxError, SandboxHost, SandboxUnavailable
from arena.sandbox.limits import Limits
from arena.sandbox.process import SEAT_DIR, Bind, Sandbox, SandboxExit

__all__ = [
    "SEAT_DIR",
    "Bind",
    "Limits",
    "Sandbox",
    "SandboxError",
    "SandboxExit",
    "SandboxHost",
    "SandboxUnavailable",
]
