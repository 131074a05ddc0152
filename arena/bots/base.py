"""What a bot is, for the referee and for people writing one in Python.

A bot sees what one seat may see (the engine's observation, a JSON-safe dict) and the
legal actions in text notation, and answers one of those texts.  That is the whole
contract, the same one a remote bot meets over gRPC, so a bot written against it here can
later be connected to a gateway unchanged.

A bot may also define ``on_event(event)`` to follow the public events of the match
(``match_start`` carries the rules, ``trick`` the cards played...).  The referee hands the
same event dict to every seat: a bot must not modify it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from arena.match.types import JSON


@runtime_checkable
class Bot(Protocol):
    """A decision maker: observation and legal action texts in, one action text out."""

    name: str

    def decide(self, observation: JSON, legal: Sequence[str]) -> str:
        """Return one element of ``legal``."""
        ...


def seat_seed(match_seed: str, seat: int, ref: str) -> str:
    """The seed a bot in ``seat`` gets: derived from the match seed by SHA-256.

    Hashing matters: the match seed determines every deal, so handing it to a bot in
    readable form would let that bot compute the other hands.
    """
    text = f"{match_seed}/seat/{seat}/{ref}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
