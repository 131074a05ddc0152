"""The trick rules of 1000: which cards a seat may play, which declarations a lead may
carry and what they are worth, and who takes the trick.

They are written once, here, on card masks, and serve two masters: the engine's play
phase (a :class:`~arena.engine.game.Game` is a :class:`TrickPlay`) and every search that
plays deals out (a :class:`~arena.engine.position.PlayState` is a position with every
hand known, as the search bot samples them).  Both are compiled with the engine
(``arena/compiled.py``), so a search pays native speed for the very rules the referee
enforces.

A move is a small integer ``kind << 5 | card``, with the kinds below in the order of the
play-phase actions (``arena.engine.actions.PLAY`` to ``CRAWL``): the engine turns moves
into actions with ``actions.MOVE_ACTIONS``, searches keep them as numbers.
"""

from __future__ import annotations

from typing import Final

from .cards import (
    ACES_MASK,
    CARD_POINTS,
    KQ,
    NINES_MASK,
    QJ,
    QUEENS_MASK,
    RJ,
    RK,
    RQ,
    SUIT_MASK,
    cards_of,
)
from .rules import Rules
from .trick_options import TrickOptions

#: Move kinds: a plain card, a marriage (K-Q), a half marriage (Q-J), four aces, four
#: nines, a card led face down (crawling).
PLAY: Final = 0
MARRY: Final = 1
HALF: Final = 2
ACES: Final = 3
NINES: Final = 4
CRAWL: Final = 5
#: What a declaration is called in the engine's events and observations.
DECLARATION_NAMES: Final[tuple[str, ...]] = ("", "marriage", "half", "aces", "nines", "")


class TrickRules(TrickOptions):
    """The options the trick rules read (:class:`TrickOptions`, declared in
    ``options.toml``), and what they add up to."""

    __slots__ = ("extras",)

    #: Whether a lead may carry anything but a K-Q marriage (crawling, half, aces, nines).
    extras: bool

    def __init__(self, rules: Rules) -> None:
        super().__init__(rules)
        self.extras = bool(
            self.blind_first_trick or self.half_marriage or self.ace_marriage
            or self.nines_marriage
        )


def follow_mask(hand: int, lead_suit: int, trump: int, must_trump: bool) -> int:
    """The cards of ``hand`` that may follow a lead of ``lead_suit``: that suit; void in
    it, a trump when the rules make trumping compulsory; else any card.  Nobody must
    beat a card."""
    m = hand & SUIT_MASK[lead_suit]
    if m:
        return m
    if must_trump and trump >= 0:
        m = hand & SUIT_MASK[trump]
        if m:
            return m
    return hand


def holding(trick: list[tuple[int, int]], trump: int) -> int:
    """The position in ``trick`` (seat, card pairs in playing order) of the card that
    holds it: the highest trump, else the highest card of the suit led."""
    best_i = 0
    best = trick[0][1]
    best_suit = best >> 3
    for i in range(1, len(trick)):
        card = trick[i][1]
        s = card >> 3
        if s == best_suit:
            if card > best:
                best_i, best = i, card
        elif s == trump:
            best_i, best, best_suit = i, card, s
    return best_i


def trick_points(trick: list[tuple[int, int]]) -> int:
    pts = 0
    for _, card in trick:
        pts += CARD_POINTS[card]
    return pts


def declared_value(tr: TrickRules, kind: int, suit: int) -> int:
    """What a declaration of ``kind`` in ``suit`` is worth under these rules."""
    if kind == MARRY:
        return tr.marriage_values[suit]
    if kind == HALF:
        return tr.marriage_values[suit] // 2
    if kind == ACES:
        return tr.ace_marriage
    return tr.nines_marriage


class TrickPlay:
    """The state the trick rules read and write, and the rules themselves as methods.

    Seats are indices; ``hands`` are card masks; ``trick`` the cards on the table in
    playing order; ``trump`` a suit or -1; ``aces_pending`` marks a seat that declared
    the four aces and leads them one after another.
    """

    __slots__ = (
        "aces_pending", "crawl", "declarer", "hands", "last_marriage", "last_trick",
        "lead_suit", "leader", "marriage_points", "n", "nactive", "nxt", "taken_points",
        "tr", "trick", "tricks_taken", "trump", "trump_by",
    )  # fmt: skip

    tr: TrickRules
    #: Seats at the table, and those playing this deal.
    n: int
    nactive: int
    #: The next active seat clockwise, by seat.
    nxt: tuple[int, ...]
    hands: list[int]
    trick: list[tuple[int, int]]
    lead_suit: int
    leader: int
    trump: int
    trump_by: int
    #: The value of the last marriage declared (ascending marriages must beat it).
    last_marriage: int
    tricks_taken: list[int]
    taken_points: list[int]
    marriage_points: list[int]
    aces_pending: list[bool]
    #: The trick in progress is played face down (crawling).
    crawl: bool
    declarer: int
    last_trick: int

    def play_mask(self, p: int) -> int:
        """The cards ``p`` may play (as plain plays) to the trick in progress."""
        hand = self.hands[p]
        if not self.trick:
            if self.aces_pending[p] and hand & ACES_MASK:
                return hand & ACES_MASK
            if self.tr.trump_lead_restricted and p == self.trump_by and self.trump >= 0:
                rest = hand & ~SUIT_MASK[self.trump]
                if rest:
                    return rest
            return hand
        if self.crawl:
            return hand
        return follow_mask(hand, self.lead_suit, self.trump, self.tr.must_trump)

    def may_marry(self, p: int) -> bool:
        """Whether ``p`` may declare now (a trick taken, enough cards in hand)."""
        tr = self.tr
        if tr.marriage_needs_trick and not self.tricks_taken[p]:
            return False
        least = tr.marriage_min_cards
        return not (least and self.hands[p].bit_count() < least)

    def may_declare(self, p: int) -> bool:
        """A quick test before :meth:`declarations`: False when the lead can only be a
        plain card (no queen beside its king, and no other kind of declaration)."""
        hand = self.hands[p]
        return bool(hand & (hand >> 1) & QUEENS_MASK) or self.tr.extras

    def declarations(self, p: int, allowed: int) -> list[int]:
        """The moves other than plain plays open to the leader ``p``, in the engine's
        order: crawls, then marriages and half marriages suit by suit, aces, nines.
        ``allowed`` is :meth:`play_mask`."""
        tr = self.tr
        hand = self.hands[p]
        out: list[int] = []
        if tr.blind_first_trick and p == self.declarer and not any(self.tricks_taken):
            out += [CRAWL << 5 | c for c in cards_of(hand)]
        if self.aces_pending[p] and hand & ACES_MASK:
            return out
        if not self.may_marry(p):
            return out
        mv = tr.marriage_values
        last = self.last_marriage
        for s in range(4):
            if hand & KQ[s] == KQ[s] and (not tr.marriage_ascending or mv[s] > last):
                for rank in (RK, RQ):
                    c = s * 8 + rank
                    if allowed >> c & 1:
                        out.append(MARRY << 5 | c)
            if (tr.half_marriage and hand & QJ[s] == QJ[s]
                    and (not tr.marriage_ascending or mv[s] // 2 > last)):
                for rank in (RQ, RJ):
                    c = s * 8 + rank
                    if allowed >> c & 1:
                        out.append(HALF << 5 | c)
        if tr.ace_marriage and hand & ACES_MASK == ACES_MASK:
            out += [ACES << 5 | c for c in cards_of(ACES_MASK & allowed)]
        if tr.nines_marriage and hand & NINES_MASK == NINES_MASK:
            out += [NINES << 5 | c for c in cards_of(NINES_MASK & allowed)]
        return out

    def declare(self, p: int, kind: int, card: int) -> int:
        """``p`` leads ``card`` declaring ``kind``: the trump changes (unless the rules
        fix it), and ``p`` scores the declaration. Returns the points scored, or -1 for a
        crawl (a face-down lead, not a declaration)."""
        if kind == CRAWL:
            self.crawl = True
            return -1
        tr = self.tr
        s = card >> 3
        value = declared_value(tr, kind, s)
        if kind == ACES:
            self.aces_pending[p] = True  # the aces are then led one after another
        if kind != NINES and not tr.fixed_trump:
            self.trump = s
            self.trump_by = p
        if kind in (MARRY, HALF):
            self.last_marriage = value
        points = value if not tr.marriage_declarer_only or p == self.declarer else 0
        self.marriage_points[p] += points
        return points

    def play(self, p: int, c: int) -> int:
        """``p`` plays ``c``; returns the seat to play next: the next seat, or the trick's
        taker once it is complete (then credited, and the table cleared)."""
        self.hands[p] &= ~(1 << c)
        trick = self.trick
        if not trick:
            self.lead_suit = c >> 3
        trick.append((p, c))
        if len(trick) < self.nactive:
            return self.nxt[p]
        win = trick[holding(trick, self.trump)][0]
        self.taken_points[win] += trick_points(trick)
        self.tricks_taken[win] += 1
        self.trick = []
        self.crawl = False
        self.last_trick = win
        if self.aces_pending[win] and not self.hands[win] & ACES_MASK:
            self.aces_pending[win] = False
        if self.hands[win]:
            self.leader = win
        return win
