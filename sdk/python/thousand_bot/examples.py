"""Small example bots to start from: ``thousand-bot run thousand_bot.examples:Simple ...``.

None of them is one of the arena's built-in bots: ``Simple`` is a few lines of card sense,
far weaker than the built-in ``greedy`` (see its docstring). The built-in bots themselves
play over a gateway as ``arena.server.builtin_remote:Greedy`` and friends, which need the
arena installed.
"""

from __future__ import annotations

import hashlib
import logging

from thousand_bot.bot import Bot, Observation, Request, first_choice
from thousand_bot.cards import (
    MARRIAGE_POINTS,
    beats,
    card_of,
    hand_points,
    marriages,
    number_of,
    points,
    strength,
    with_verb,
)


class FirstLegal(Bot):
    """The first legal action that is not ``concede``: the smallest bot there is."""

    def decide(self, observation: Observation, legal: list[str]) -> str:
        return first_choice(legal)


class Random(Bot):
    """A uniformly random legal action, reproducible: the choice is a hash of the match,
    the request and the legal actions, never the global random generator."""

    def on_request(self, request: Request) -> str:
        text = f"{request.match_id}/{request.request_id}/{'|'.join(request.legal)}"
        digest = hashlib.sha256(text.encode()).digest()
        return request.legal[int.from_bytes(digest[:8], "big") % len(request.legal)]


class Simple(Bot):
    """Bids what its hand looks worth, names the lowest contract, declares marriages,
    leads its strongest card and takes tricks as cheaply as it can; never concedes.

    A starting point, not a sparring partner: it is not the arena's built-in ``greedy``
    (which estimates its hand, keeps its best cards and follows the cards played) and is
    far weaker than it, about 250 Elo in duplicate sets (``arena bench strength --bot
    thousand_bot.examples:Simple --opponent greedy``)."""

    def bid(self, observation: Observation, legal: list[str]) -> str:
        hand = observation.get("hand", [])
        worth = hand_points(hand) + sum(MARRIAGE_POINTS[s] for s in marriages(hand)) + 30
        bids = [a for a in with_verb(legal, "bid") if (number_of(a) or 0) <= worth]
        if bids:
            return min(bids, key=lambda a: number_of(a) or 0)
        return "pass" if "pass" in legal else first_choice(legal)

    def contract(self, observation: Observation, legal: list[str]) -> str:
        contracts = with_verb(legal, "contract")
        if contracts:
            return min(contracts, key=lambda a: number_of(a) or 0)
        return first_choice(legal)

    def play(self, observation: Observation, legal: list[str]) -> str:
        marriages = with_verb(legal, "marry")
        if marriages:
            return marriages[0]
        plays = with_verb(legal, "play")
        if not plays:
            return first_choice(legal)

        def cheapness(action: str) -> tuple[int, int]:
            card = card_of(action) or ""
            return points(card), strength(card)

        plays.sort(key=cheapness)
        trick = [(int(s), str(c)) for s, c in observation.get("trick", []) if c != "XX"]
        if not trick:
            return plays[-1]
        trump = observation.get("trump")
        best = trick[0][1]
        for _, card in trick[1:]:
            if beats(card, best, trump):
                best = card
        winning = [a for a in plays if beats(card_of(a) or "", best, trump)]
        return winning[0] if winning else plays[0]


class Greedy(Simple):
    """The earlier name of :class:`Simple`, still working. The name misled: this was never
    the arena's built-in ``greedy``, and it plays far weaker."""

    def __init__(self) -> None:
        global _renamed_told
        if not _renamed_told:
            _renamed_told = True
            logging.getLogger("thousand_bot").warning(
                "thousand_bot.examples:Greedy is now called Simple: it is not the arena's "
                "built-in greedy bot, and far weaker (the built-in one plays over a gateway "
                "as arena.server.builtin_remote:Greedy)")


_renamed_told = False

__all__ = ["FirstLegal", "Greedy", "Random", "Simple"]
