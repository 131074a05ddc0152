"""Cards and actions as the server writes them, with the small calculations every bot needs.

A card is two characters, rank then suit: ranks ``7 8 9 J Q K T A`` from low to high (``T`` is
the ten, which outranks the king), suits ``C S H D``. An action is text such as ``bid 105``
or ``play QS``; these helpers pull it apart so a bot never has to parse strings itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

RANKS = "789JQKTA"
SUITS = "CSHD"
#: Card points by rank: A 11, T 10, K 4, Q 3, J 2, 9 8 7 nothing.
POINTS = {"7": 0, "8": 0, "9": 0, "J": 2, "Q": 3, "K": 4, "T": 10, "A": 11}
#: Marriage value by suit in the classic preset (other presets differ: see the rules JSON).
MARRIAGE_POINTS = {"H": 100, "D": 80, "C": 60, "S": 40}

#: Action verbs grouped by the decision they belong to (see Bot.decide).
AUCTION_VERBS = frozenset({"pass", "bid", "blind", "look"})
TALON_VERBS = frozenset({"redeal", "sell", "keep", "buy", "talon"})
EXCHANGE_VERBS = frozenset({"give", "discard", "bank"})
CONTRACT_VERBS = frozenset({"contract", "concede", "trump"})
PLAY_VERBS = frozenset({"play", "marry", "half", "aces", "nines", "crawl"})


def normalize_card(card: str) -> str:
    """``10h`` or ``th`` -> ``TH``; raises ValueError for anything that is not a card."""
    text = card.strip().upper()
    if text.startswith("10"):
        text = "T" + text[2:]
    if len(text) != 2 or text[0] not in RANKS or text[1] not in SUITS:
        raise ValueError(f"not a card: {card!r} (expected rank 7-A or T/10 and suit C S H D)")
    return text


def rank(card: str) -> str:
    return card[0]


def suit(card: str) -> str:
    return card[1]


def points(card: str) -> int:
    return POINTS[card[0]]


def strength(card: str) -> int:
    """Order of a card within its suit, 0 for the seven up to 7 for the ace."""
    return RANKS.index(card[0])


def hand_points(cards: Iterable[str]) -> int:
    return sum(points(c) for c in cards)


def sort_hand(cards: Iterable[str]) -> list[str]:
    """By suit (C S H D), then from high to low, the way a player holds them."""
    return sorted(cards, key=lambda c: (SUITS.index(c[1]), -strength(c)))


def by_suit(cards: Iterable[str]) -> dict[str, list[str]]:
    """The cards of each suit, highest first; every suit is present, maybe empty."""
    groups: dict[str, list[str]] = {s: [] for s in SUITS}
    for c in cards:
        groups[c[1]].append(c)
    for s in SUITS:
        groups[s].sort(key=strength, reverse=True)
    return groups


def marriages(cards: Iterable[str]) -> list[str]:
    """Suits in which the hand holds both king and queen."""
    held = set(cards)
    return [s for s in SUITS if f"K{s}" in held and f"Q{s}" in held]


def beats(card: str, best: str, trump: str | None) -> bool:
    """Whether ``card`` takes a trick that ``best`` is winning so far.

    A trump beats any non-trump; otherwise only a higher card of the same suit wins.
    """
    if suit(card) == suit(best):
        return strength(card) > strength(best)
    return trump is not None and suit(card) == trump


def trick_winner(trick: Sequence[Sequence[object]], trump: str | None) -> int:
    """Seat winning the trick so far; ``trick`` is ``[[seat, card], ...]`` in playing order."""
    if not trick:
        raise ValueError("an empty trick has no winner")
    best_seat, best_card = int(str(trick[0][0])), str(trick[0][1])
    for seat, card in trick[1:]:
        if beats(str(card), best_card, trump):
            best_seat, best_card = int(str(seat)), str(card)
    return best_seat


@dataclass(frozen=True)
class Action:
    """An action pulled apart: ``give QS 2`` is verb ``give``, card ``QS``, number ``2``."""

    text: str
    verb: str
    card: str | None = None
    number: int | None = None
    suit: str | None = None

    def __str__(self) -> str:
        return self.text


def parse_action(text: str) -> Action:
    """Parse action notation; raises ValueError with the reason when it is not valid."""
    words = text.split()
    if not words:
        raise ValueError("empty action")
    verb = words[0].lower()
    args = words[1:]
    if verb in {"pass", "look", "redeal", "sell", "keep", "concede"} and not args:
        return Action(text=verb, verb=verb)
    numbered = {"bid", "blind", "buy", "talon", "contract"}
    if verb in numbered and len(args) == 1 and args[0].isdigit():
        number = int(args[0])
        return Action(text=f"{verb} {number}", verb=verb, number=number)
    if verb == "trump" and len(args) == 1 and args[0].upper() in SUITS:
        s = args[0].upper()
        return Action(text=f"trump {s}", verb=verb, suit=s)
    if verb == "give" and len(args) == 2 and args[1].isdigit():
        c = normalize_card(args[0])
        return Action(text=f"give {c} {int(args[1])}", verb=verb, card=c, number=int(args[1]))
    if verb in PLAY_VERBS | {"discard", "bank"} and len(args) == 1:
        c = normalize_card(args[0])
        return Action(text=f"{verb} {c}", verb=verb, card=c)
    raise ValueError(f"not an action: {text!r}")


def verb(action: str) -> str:
    return action.split(" ", 1)[0]


def with_verb(legal: Iterable[str], *verbs: str) -> list[str]:
    """The legal actions that use one of the verbs, in the order given."""
    wanted = set(verbs)
    return [a for a in legal if verb(a) in wanted]


def card_of(action: str) -> str | None:
    """The card an action names, if any (``play QS`` -> ``QS``)."""
    return parse_action(action).card


def number_of(action: str) -> int | None:
    """The number an action names, if any (``bid 105`` -> 105)."""
    return parse_action(action).number
