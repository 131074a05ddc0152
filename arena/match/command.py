"""``cmd:COMMAND`` bot references: the command line of a bot program, and whether it runs.

Kept apart from the seat, which needs the gateway's hub, so that validating a tournament
spec or a command line costs no more than ``shlex``.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Sequence
from pathlib import Path

#: The bot reference of a program: ``cmd:`` and its command line.
PREFIX = "cmd:"


def parse_command(ref: str) -> list[str]:
    """The command line of a ``cmd:`` reference, split as a shell splits it (no shell
    runs it); ValueError when there is none or its quotes do not close."""
    text = ref[len(PREFIX):] if ref.startswith(PREFIX) else ref
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        raise ValueError(f"bot reference {ref!r}: {exc}") from None
    if not argv:
        raise ValueError(f"bot reference {ref!r}: give the program's command after {PREFIX}")
    return argv


def program_problem(argv: Sequence[str], cwd: str | None = None) -> str | None:
    """Why the program of ``argv`` cannot be run from here (no such file, not
    executable), or None: said before a match starts rather than as a match of timeouts."""
    program = argv[0]
    if "/" in program:
        path = Path(cwd or ".") / program
        if not path.exists():
            return f"no program {program}" + (" (build it first?)" if not path.suffix else "")
        if path.is_dir() or not os.access(path, os.X_OK):
            return f"{program} is not an executable program"
        return None
    if shutil.which(program) is None:
        return f"no program {program!r} on the PATH"
    return None
