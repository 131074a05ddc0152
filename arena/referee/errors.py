"""The referee's own exceptions, kept out of the compiled modules (``arena.compiled``):
a compiled class cannot derive from ``RuntimeError``, and these must stay
``RuntimeError`` for the executors and tests that catch them as such."""

from __future__ import annotations


class PlatformError(RuntimeError):
    """A seat's transport could not carry the decision (Redis unreachable, the gateway
    holding the bot died): nobody's fault at the table, so the referee asks again once the
    platform is back, rather than playing a move for the seat or counting a strike."""


class RefereeError(RuntimeError):
    """The match cannot go on for a reason no seat caused (the match ends as an error)."""


class PlatformUnavailable(RefereeError):
    """The platform could not reach a seat for longer than the match waits out an outage;
    the match is not over, and an executor may play it again from the start."""
