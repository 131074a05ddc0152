"""Small example bots: run one with ``thousand-bot run thousand_bot.examples:Greedy ...``."""

from __future__ import annotations

import hashlib

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


class Greedy(Bot):
    """Bids what its hand looks worth, names the lowest contract, declares marriages,
    leads its strongest card and takes tricks as cheaply as it can."""

    def bid(self, observation: Observation, legal: list[str]) -> str:
        hand = observation.get("hand", [])
        worth = hand_points(hand) + sum(MARRIAGE_POINTS[s] for s in marriages(hand)) + 30
        bids = [a for a in with_verb(legal, "bid") if (number_of(a) or 0) <= worth]
        if bids:
            return min(bids, key=lambda a: number_of(a) or 0)
        return "pass" if "pass" in legal else legal[0]

    def contract(self, observation: Observation, legal: list[str]) -> str:
        contracts = with_verb(legal, "contract")
        if contracts:
            return min(contracts, key=lambda a: number_of(a) or 0)
        return legal[0]

    def play(self, observation: Observation, legal: list[str]) -> str:
        marriages = with_verb(legal, "marry")
        if marriages:
            return marriages[0]
        plays = with_verb(legal, "play")
        if not plays:
            return legal[0]

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


__all__ = ["FirstLegal", "Greedy", "Random"]
