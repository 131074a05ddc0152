"""The referee's own exceptions, kept out of the compiled modules (``arena.compiled``):
a compiled class cannot derive from ``RuntimeError``, and these must stay
``RuntimeError`` for the executors and tests that catch them as such."""

from __future__ import annotations

import asyncio
from typing import Any


class PlatformError(RuntimeError):
    """A seat's transport could not carry the decision (Redis unreachable, the gateway
    holding the bot died): nobody's fault at the table, so the referee asks again once the
    platform is back, rather than playing a move for the seat or counting a strike."""


def fail_decision(future: asyncio.Future[Any], error: BaseException) -> None:
    """End a seat's pending decision with ``error`` (a :class:`PlatformError`, a
    ``TimeoutError``...), handed over as the future's result rather than set as its
    exception. The referee's wait awaits that future itself, and in the compiled referee
    an error raised into the wait leaves the interpreter's record of the exception being
    handled behind, to come back at the next ``except`` (a forfeit's ``_Stop`` then went
    out as that error); a result never raises. The referee reads an exception result as
    the failure it is (``_Match._settled``)."""
    if not future.done():
        future.set_result(error)


class RefereeError(RuntimeError):
    """The match cannot go on for a reason no seat caused (the match ends as an error)."""


class PlatformUnavailable(RefereeError):
    """The platform could not reach a seat for longer than the match waits out an outage;
    the match is not over, and an executor may play it again from the start."""
