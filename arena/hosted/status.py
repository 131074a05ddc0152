"""What happened to a hosted seat in one match: one status, never a guess.

Every hosted seat of every match records exactly one of these, with a line of detail. A
``sandbox_error`` is the platform's fault: the match is voided and played again, and the
bot is never charged for it. Everything else is the bot's own doing.
"""

from __future__ import annotations

import signal
from dataclasses import asdict, dataclass, field
from typing import Any

OK = "ok"
START_FAILED = "start_failed"
CRASH = "crash"
TIMEOUT = "timeout"
CPU_LIMIT = "cpu_limit"
MEMORY_LIMIT = "memory_limit"
PROTOCOL_ERROR = "protocol_error"
SANDBOX_ERROR = "sandbox_error"

STATUSES = (OK, START_FAILED, CRASH, TIMEOUT, CPU_LIMIT, MEMORY_LIMIT, PROTOCOL_ERROR,
            SANDBOX_ERROR)
#: Statuses of a bot whose process did not survive its match: N of them in a row suspend
#: the version (see :mod:`arena.hosted.store`).
CRASHES = frozenset({START_FAILED, CRASH, CPU_LIMIT, MEMORY_LIMIT})

LABELS = {
    OK: "ok",
    START_FAILED: "start failed",
    CRASH: "crash",
    TIMEOUT: "timeout",
    CPU_LIMIT: "CPU limit",
    MEMORY_LIMIT: "memory limit",
    PROTOCOL_ERROR: "protocol error",
    SANDBOX_ERROR: "sandbox error",
}


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


@dataclass
class SeatRun:
    """One hosted seat's run in one match: the status, its detail and the bot's log.

    The log is its author's only (stderr, and stdout unless stdout is its protocol, capped);
    nothing here reaches the match's public record.
    """

    seat: int
    bot: str
    version: str
    status: str
    detail: str = ""
    exit_code: int | None = None
    signal: int | None = None
    #: Milliseconds from spawning the sandbox until it was ready to start the bot, and
    #: until the bot had opened its seat's stream (None: it never did).
    sandbox_ms: float | None = None
    connect_ms: float | None = None
    log: bytes = field(default=b"", repr=False)
    match_id: str = ""

    @property
    def label(self) -> str:
        text = LABELS.get(self.status, self.status)
        if self.status == CRASH:
            if self.signal is not None:
                return f"{text} ({signal_name(self.signal)})"
            if self.exit_code is not None:
                return f"{text} (exit code {self.exit_code})"
        return text

    def to_json(self) -> dict[str, Any]:
        """Without the log (kept apart, for the author only)."""
        data = asdict(self)
        data.pop("log")
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any], log: bytes = b"") -> SeatRun:
        known = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in known and k != "log"}, log=log)
