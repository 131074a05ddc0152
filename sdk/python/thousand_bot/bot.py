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


def first_choice(legal: list[str]) -> str:
    """The first legal action other than ``concede``: what a bot that has no opinion does,
    since giving up a deal by accident is the one default that costs points."""
    for action in legal:
        if action != "concede":
            return action
    return legal[0]


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
    return the first legal action (never ``concede``), so a half-written bot still plays.

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
        """Choose an action. By default, hands the decision to the method of its kind."""
        verbs = {verb(a) for a in legal}
        if verbs & PLAY_VERBS:
            return self.play(observation, legal)
        if verbs & EXCHANGE_VERBS:
            return self.exchange(observation, legal)
        if verbs & TALON_VERBS:
            return self.talon(observation, legal)
        if verbs & AUCTION_VERBS:
            return self.bid(observation, legal)
        if verbs & CONTRACT_VERBS:
            return self.contract(observation, legal)
        return first_choice(legal)

    def bid(self, observation: Observation, legal: list[str]) -> str:
        """Auction: ``pass``, ``bid N``, ``blind N`` or ``look``."""
        return first_choice(legal)

    def talon(self, observation: Observation, legal: list[str]) -> str:
        """Talon: ``talon K`` (which talon to take), ``buy N``, ``sell``, ``keep``, ``redeal``."""
        return first_choice(legal)

    def exchange(self, observation: Observation, legal: list[str]) -> str:
        """Cards leaving the declarer's hand: ``give CARD SEAT``, ``discard CARD``,
        ``bank CARD``; ``concede`` may be offered too."""
        return first_choice(legal)

    def contract(self, observation: Observation, legal: list[str]) -> str:
        """Fixing the deal: ``contract N``, ``trump S`` or ``concede``."""
        return first_choice(legal)

    def play(self, observation: Observation, legal: list[str]) -> str:
        """A card: ``play CARD``, ``marry CARD`` (lead K or Q declaring the marriage), ..."""
        return first_choice(legal)

    def wants_events(self) -> bool:
        """Whether the server should send match events: by default only when the class
        overrides :meth:`on_event`, since events are most of the traffic."""
        return type(self).on_event is not Bot.on_event

    def on_event(self, event: dict[str, Any]) -> None:
        """A public event of a match this bot plays (``event["type"]``: ``match_start``,
        ``deal_start``, ``action``, ``trick``, ``deal_end``, ``match_end``)."""

    def on_error(self, request_id: str, code: str, reason: str) -> None:
        """The server refused an answer (an illegal or malformed action...). Logged by the
        client; override to react."""
