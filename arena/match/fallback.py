"""The action the referee plays for a seat that did not answer properly.

When a seat times out, answers something unparsable or answers an illegal action, the
match still has to go on, and it has to go on the same way every time so that a replay
and a rerun agree.  The fallback is therefore a pure function of the legal actions (in
their text notation), simple enough for a bot author to predict:

1. ``pass`` when it is legal (auction, sale, a redeal question: four nines, a low hand
   or a poor talon), else ``look`` (blind bid), else ``keep`` (sale offer): the fallback
   never calls a redeal;
2. the lowest ``contract`` (the contract stays as it is), the first ``talon`` and the
   first ``trump`` suit listed (clubs, spades, hearts, diamonds);
3. a plain card action (``play``, ``give``, ``discard``, ``bank``) with the lowest card:
   rank ``7 8 9 J Q K T A`` first, then suit ``C S H D``; a card given goes to the
   lowest seat number offered.  The fallback never declares a marriage, never crawls
   and never concedes;
4. anything else: the first legal action in the engine's order.
"""

from __future__ import annotations

from collections.abc import Sequence

_RANKS = "789JQKTA"
_SUITS = "CSHD"
_CARD_KINDS = ("play", "give", "discard", "bank")
_FIXED = ("pass", "look", "keep")


def _card_key(card: str) -> tuple[int, int]:
    return _RANKS.index(card[0]), _SUITS.index(card[1])


def _give_key(text: str) -> tuple[int, int, int]:
    parts = text.split()
    rank, suit = _card_key(parts[1])
    target = int(parts[2]) if len(parts) > 2 else 0
    return rank, suit, target


def fallback_action(legal: Sequence[str]) -> str:
    """The referee's replacement action; ``legal`` must not be empty."""
    if not legal:
        raise ValueError("no legal action to fall back on")
    for fixed in _FIXED:
        if fixed in legal:
            return fixed
    by_kind: dict[str, list[str]] = {}
    for text in legal:
        by_kind.setdefault(text.split(" ", 1)[0], []).append(text)
    contracts = by_kind.get("contract")
    if contracts:
        return min(contracts, key=lambda t: int(t.split()[1]))
    for kind in ("talon", "trump"):
        if kind in by_kind:
            return by_kind[kind][0]
    cards = [t for kind in _CARD_KINDS for t in by_kind.get(kind, ())]
    if cards:
        return min(cards, key=_give_key)
    return legal[0]
