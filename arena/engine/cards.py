"""Cards as small integers and hands as bit masks.

A card is ``suit * 8 + rank`` with suits clubs, spades, hearts, diamonds (``C S H D``)
and ranks ``7 8 9 J Q K T A`` from low to high, so a higher index inside a suit is a
stronger card and a hand is a 32-bit mask.  This keeps the hot paths of the engine
(legal moves, trick winners) to a few integer operations.
"""

from __future__ import annotations

from collections.abc import Iterable

from .errors import NotationError

SUITS = "CSHD"
RANKS = "789JQKTA"
SUIT_NAMES = ("clubs", "spades", "hearts", "diamonds")

CLUBS, SPADES, HEARTS, DIAMONDS = 0, 1, 2, 3
R7, R8, R9, RJ, RQ, RK, RT, RA = range(8)

#: Card points by rank index: A 11, 10 10, K 4, Q 3, J 2, 9 (and 8, 7) 0.
RANK_POINTS = (0, 0, 0, 2, 3, 4, 10, 11)
CARD_POINTS = tuple(RANK_POINTS[c & 7] for c in range(32))

SUIT_MASK = tuple(0xFF << (8 * s) for s in range(4))

#: The 24-card deck (9 to ace) and the 32-card deck (7 to ace), in canonical order:
#: suits C S H D, inside a suit from low to high.  Shuffles start from this order.
DECK_24 = tuple(s * 8 + r for s in range(4) for r in range(R9, RA + 1))
DECK_32 = tuple(range(32))

MASK_24 = sum(1 << c for c in DECK_24)
MASK_32 = (1 << 32) - 1

#: The king and queen of each suit (a marriage), the queen and jack (a half marriage).
KQ = tuple((1 << (s * 8 + RK)) | (1 << (s * 8 + RQ)) for s in range(4))
QJ = tuple((1 << (s * 8 + RQ)) | (1 << (s * 8 + RJ)) for s in range(4))
#: The four aces, the four nines, the four queens.
ACES_MASK = sum(1 << (s * 8 + RA) for s in range(4))
NINES_MASK = sum(1 << (s * 8 + R9) for s in range(4))
QUEENS_MASK = sum(1 << (s * 8 + RQ) for s in range(4))


def card(rank: int, suit: int) -> int:
    return suit * 8 + rank


CARD_NAMES = tuple(RANKS[c & 7] + SUITS[c >> 3] for c in range(32))


def card_str(c: int) -> str:
    return CARD_NAMES[c]


def parse_card(text: str) -> int:
    """Parse ``QH``, ``TH`` or ``10H`` (any case) into a card index."""
    t = text.strip().upper()
    if t.startswith("10"):
        t = "T" + t[2:]
    if len(t) != 2 or t[0] not in RANKS or t[1] not in SUITS:
        raise NotationError(
            f"bad card {text!r}: expected rank 7 8 9 J Q K T(10) A and suit C S H D, e.g. 'QH'"
        )
    return SUITS.index(t[1]) * 8 + RANKS.index(t[0])


def parse_suit(text: str) -> int:
    t = text.strip().upper()
    if len(t) != 1 or t not in SUITS:
        raise NotationError(f"bad suit {text!r}: expected one of C S H D")
    return SUITS.index(t)


def mask_of(cards: Iterable[int]) -> int:
    m = 0
    for c in cards:
        m |= 1 << c
    return m


def cards_of(mask: int) -> list[int]:
    """Cards of a mask in ascending index order."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def mask_points(mask: int) -> int:
    total = 0
    while mask:
        low = mask & -mask
        total += CARD_POINTS[low.bit_length() - 1]
        mask ^= low
    return total


#: The names of the cards of one suit's byte of a mask, for every byte value: a hand or a
#: talon is named with four lookups (the observation names a few of them per decision).
_SUIT_NAMES = tuple(
    tuple(tuple(CARD_NAMES[8 * s + r] for r in range(8) if byte >> r & 1) for byte in range(256))
    for s in range(4)
)


def cards_str(mask: int) -> list[str]:
    """Names of the cards of a mask, in ascending index order (as :func:`cards_of`)."""
    if not 0 <= mask < 1 << 32:
        raise ValueError(f"not a card mask: {mask:#x}")
    a, b, c, d = _SUIT_NAMES
    return [*a[mask & 0xFF], *b[mask >> 8 & 0xFF], *c[mask >> 16 & 0xFF], *d[mask >> 24]]


def hand_str(mask: int) -> str:
    """A hand for people: grouped by suit, strongest first (``AH TH  KS  9D``)."""
    parts = []
    for s in range(4):
        cs = [CARD_NAMES[c] for c in reversed(cards_of(mask & SUIT_MASK[s]))]
        if cs:
            parts.append(" ".join(cs))
    return "  ".join(parts) if parts else "-"
