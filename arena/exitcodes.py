"""The exit status of every ``arena`` command and of ``thousand-bot`` (docs/cli.md).

One table for all commands, so a script or a service manager can tell "try again later"
(3) from "fix the input" (2) and "fix the credentials" (4) without knowing which command
it ran.
"""

from __future__ import annotations

import os
import sys

OK = 0
#: The command ran and the answer is no: a match failed or was cut short, a check found
#: problems, a replay or a tournament does not verify, the gateway refused a request.
FAILED = 1
#: A mistake in what was asked: an option, a file, a spec, a bot reference, a URL.
USAGE = 2
#: A service the command needs (gateway, Redis, database, broker) cannot be reached, or
#: was lost for too long; the same command may succeed later.
UNAVAILABLE = 3
#: The gateway refused the credentials (an unknown, revoked or replaced token, or the
#: wrong kind of token): retrying will not help.
REFUSED = 4
INTERRUPTED = 130
TERMINATED = 143
#: The reader of the output went away (``arena ... | head``): 128 + SIGPIPE, what the
#: shell reports for any program stopped there.
BROKEN_PIPE = 141


def silence_stdout() -> None:
    """Point stdout at /dev/null, so later prints and the exit flush of a closed pipe
    raise nothing (and print no "Exception ignored" line)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no real stdout (a test's capture): nothing to do
        pass
