"""The base class of a bot: override one method per kind of decision, or ``decide``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from thousand_bot.cards import (
    AUCTION_VERBS,
    CONTRACT_VERBS,
    EXCHANGE_VERBS,
    PLAY_VERBS,
    TALON_VERBS,
    verb,
)

Observation = dict[str, Any]


@dataclass(frozen=True)
class Request:
    """One decision request as it arrived, for bots that play several matches at once and
    keep state per match."""

    match_id: str
    request_id: str
    seat: int
    observation: Observation
    legal: list[str]
    deadline_ms: int
    time_bank_ms: int


class Bot:
    """A bot for the card game 1000.

    The simplest bot overrides :meth:`decide` and returns one of ``legal``. A bot that thinks
    in game terms overrides the method of each decision instead: :meth:`bid` (the auction),
    :meth:`talon` (taking, buying or selling the talon), :meth:`exchange` (cards to give away
    or discard), :meth:`contract` (the final contract, trump choice or conceding) and
    :meth:`play` (cards and marriages). Each returns an action from ``legal``; the defaults
    return the first legal action, so a half-written bot still plays.

    ``observation`` is a dictionary with the keys described in ``docs/protocol.md``: ``hand``,
    ``phase``, ``scores``, ``trick``, ``trump``... exactly what the rules engine shows the seat.
    """

    #: Name of the bot on the server. Empty: the name the token was registered under.
    name: str = ""
    #: Version string shown to the organiser.
    version: str = "0.1.0"
    #: Matches one instance plays at once; 0 lets the server send as many as it likes.
    max_concurrent_matches: int = 0

    def on_request(self, request: Request) -> str:
        """Entry point for every decision; override for access to match and request ids."""
        return self.decide(request.observation, request.legal)

    def decide(self, observation: Observation, legal: list[str]) -> str:
        """Choose an action. Dispatches on the kind of decision by default."""
        kind = verb(legal[0]) if legal else ""
        if kind in AUCTION_VERBS:
            return self.bid(observation, legal)
        if kind in TALON_VERBS:
            return self.talon(observation, legal)
        if kind in EXCHANGE_VERBS:
            return self.exchange(observation, legal)
        if kind in CONTRACT_VERBS:
            return self.contract(observation, legal)
        if kind in PLAY_VERBS:
            return self.play(observation, legal)
        return legal[0]

    def bid(self, observation: Observation, legal: list[str]) -> str:
        """Auction: ``pass``, ``bid N``, ``blind N`` or ``look``."""
        return legal[0]

    def talon(self, observation: Observation, legal: list[str]) -> str:
        """Talon: ``talon K`` (which talon to take), ``buy N``, ``sell``, ``keep``, ``redeal``."""
        return legal[0]

    def exchange(self, observation: Observation, legal: list[str]) -> str:
        """Cards leaving the declarer's hand: ``give CARD SEAT``, ``discard CARD``,
        ``bank CARD``."""
        return legal[0]

    def contract(self, observation: Observation, legal: list[str]) -> str:
        """Fixing the deal: ``contract N``, ``concede`` or ``trump S``."""
        return legal[0]

    def play(self, observation: Observation, legal: list[str]) -> str:
        """A card: ``play CARD``, ``marry CARD`` (lead K or Q declaring the marriage), ..."""
        return legal[0]

    def on_event(self, event: dict[str, Any]) -> None:
        """A public event of a match this bot plays (``event["type"]``: ``match_start``,
        ``deal_start``, ``action``, ``trick``, ``deal_end``, ``match_end``)."""

    def on_error(self, request_id: str, code: str, reason: str) -> None:
        """The server refused an answer (an illegal or malformed action...). Logged by the
        client; override to react."""
