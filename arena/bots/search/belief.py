"""What one seat knows about the hidden cards of a deal, and worlds sampled from it.

A seat sees its own hand, the cards played (the public ``trick`` events), a talon turned
face up, the cards it gave and received, the marriages declared and shown, and the
auction.  From that it can say, for every card it has not seen, where the card may be:

* a card is never in the hand of a player who has shown a void in its suit: not following
  the led suit, or (with the must-trump rule) not trumping either;
* a declared marriage leaves its other half in the declarer's hand; a marriage shown in
  the auction stays with its holder until played; a card this seat gave stays with its
  receiver until played;
* a public talon went to the declarer; of the cards the declarer then passed to other
  players one in ``hand_size`` is, a priori, a talon card (which ones is drawn first);
* a bid above the plain limit means the bidder was dealt a marriage (as much as the bid
  needs, when bids are capped by the marriages held): worlds without one are redrawn.

:class:`Knowledge` holds this as one domain per unseen card (the places it may be) and a
capacity per place (how many unseen cards it holds); :meth:`Knowledge.sample` fills the
places at random, the most constrained cards first, each card to a place with a chance
proportional to the room left there (which is uniform when nothing constrains).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from arena.engine.cards import CARD_NAMES, MASK_24, MASK_32, RJ, RQ, SUIT_MASK
from arena.engine.rules import Rules

from .lean import ACES_MASK, KQ, NINES_MASK, cards_of

SUITS = "CSHD"
CARD = {name: c for c, name in enumerate(CARD_NAMES)}


def mask_of_names(names: Sequence[Any] | None) -> int:
    m = 0
    for name in names or ():
        c = CARD.get(name) if isinstance(name, str) else None
        if c is not None:
            m |= 1 << c
    return m


def suit_bits(mask: int) -> int:
    """Which suits (bit per suit) a mask holds cards of."""
    return sum(1 << s for s in range(4) if mask & SUIT_MASK[s])


@dataclass
class TrickSeen:
    cards: list[tuple[int, int]]
    trump: int
    face_down: bool


@dataclass
class DealHistory:
    """The public happenings of one deal as a seat follows them through the events."""

    deal: int
    dealer: int = 0
    tricks: list[TrickSeen] = field(default_factory=list)
    #: (seat, suit, kind) of every declaration, in order.
    declarations: list[tuple[int, int, str]] = field(default_factory=list)
    #: The declaration made with the lead of each trick (by trick index).
    declared_at: dict[int, str] = field(default_factory=dict)
    trump: int = -1
    trump_by: int = -1
    last_marriage: int = 0
    talon: int = 0
    crawl: bool = False
    #: This seat's own hidden exchange actions (a card put into the bank).
    my_bank: int = 0
    #: Whether the events of this deal were seen from its start.
    complete: bool = True

    def played(self) -> int:
        m = 0
        for t in self.tricks:
            for _, c in t.cards:
                m |= 1 << c
        return m

    def played_by(self, seat: int) -> int:
        m = 0
        for t in self.tricks:
            for s, c in t.cards:
                if s == seat:
                    m |= 1 << c
        return m


def voids_from_trick(cards: Sequence[tuple[int, int]], trump: int, must_trump: bool,
                     voids: list[int]) -> None:
    """Add the voids that the followers of a trick (face up) have shown."""
    if not cards:
        return
    lead = cards[0][1] >> 3
    for seat, c in cards[1:]:
        s = c >> 3
        if s != lead:
            voids[seat] |= 1 << lead
            if must_trump and trump >= 0 and s != trump:
                voids[seat] |= 1 << trump


def _place(randrange: Callable[[int], int], places: Sequence[int], cap: list[int]) -> int:
    """A place for one card, each of ``places`` with a chance proportional to the room it
    has left (``cap``); -1 when none has room."""
    total = 0
    for p in places:
        total += cap[p]
    if not total:
        return -1
    x = randrange(total)
    for p in places:
        x -= cap[p]
        if x < 0:
            return p
    return -1


def _pick_given(rng: random.Random, cands: list[int], other_weight: int, room: int) -> int:
    """Which of the talon cards ``cands`` a receiver got, or -1 for none of them: each
    card weighs one, any other card ``other_weight`` (the draw is made even without
    ``room`` left, so that the random stream does not depend on it)."""
    if not cands:
        return -1
    k = rng.randrange(len(cands) + other_weight)
    return cands[k] if k < len(cands) and room > 0 else -1


class Knowledge:
    """Domains and capacities of the unseen cards, from one seat's point of view.

    Places are the other seats (indices ``0..n-1``) and hidden piles (``n`` and up, named
    in ``pile_names``).  ``must[place]`` are cards known to be there, ``hands`` the final
    hands of a sampled world (seats only) and ``piles`` the sampled pile contents.
    """

    def __init__(self, n: int, me: int, my_hand: int) -> None:
        self.n = n
        self.me = me
        self.my_hand = my_hand
        self.capacity: list[int] = [0] * n
        self.must: list[int] = [0] * n
        self.voids: list[int] = [0] * n
        self.pile_names: list[str] = []
        #: Cards each place may hold (beyond the void rule): a mask per place, -1 for any.
        self.allowed: list[int] = [-1] * n
        self.unknown = 0
        #: Seats that were dealt a marriage worth at least this much (0: none needed).
        self.needs_marriage: dict[int, int] = {}
        #: Cards each seat is known to have held when it bid (played or not).
        self.history: list[int] = [0] * n
        self.mv: tuple[int, ...] = (0, 0, 0, 0)
        #: (receiver, candidates, weight of "not one of them") choices made before sampling.
        self.give_choices: list[tuple[int, int, int]] = []
        #: A public talon taken by ``talon_home``: its cards are there, in one of the
        #: piles that allow them, or given on (``give_choices``).
        self.talon_cards = 0
        self.talon_home = -1
        #: Points out of hand already known: (to the last trick, to the declarer).
        self.extra_known = (0, 0)

    def add_pile(self, name: str, capacity: int, allowed: int = -1) -> int:
        self.pile_names.append(name)
        self.capacity.append(capacity)
        self.must.append(0)
        self.voids.append(0)
        self.allowed.append(allowed)
        return len(self.capacity) - 1

    def pile(self, name: str) -> int:
        return self.n + self.pile_names.index(name)

    def consistent_size(self) -> bool:
        return self.unknown.bit_count() == sum(max(0, c) for c in self.capacity) and all(
            c >= 0 for c in self.capacity
        )

    # ------------------------------------------------------------------ sampling
    def sample(self, rng: random.Random, tries: int = 6) -> list[int] | None:
        """Contents of every place (seats then piles) of one random consistent world.

        A few quick draws first; when the constraints are tight enough to make them fail,
        a draw that checks at every card that the rest can still be placed (Hall's
        condition), which finds a consistent world whenever there is one.  A world that
        does not explain the bids is drawn again (up to ``tries`` times).
        """
        out: list[int] | None = None
        for attempt in range(tries):
            out = self._draw_fast(rng) if attempt < 2 else self._draw(rng, checked=True)
            if out is not None and self._bids_ok(out):
                return out
        return out if out is not None else self._draw(rng, checked=True, loose=True)

    def _domains(self, cards: list[int]) -> list[int]:
        """For each card, the places (bit per place) it may be in."""
        places = len(self.capacity)
        n = self.n
        home = self.talon_home
        out = []
        for c in cards:
            bit = 1 << c
            suit_bit = 1 << (c >> 3)
            tied = home >= 0 and bool(self.talon_cards & bit)
            dom = 0
            for p in range(places):
                if ((self.allowed[p] == -1 or self.allowed[p] & bit)
                        and not (self.voids[p] & suit_bit) and self.capacity[p] > 0
                        and not (tied and p < n and p != home)):
                    dom |= 1 << p
            out.append(dom)
        return out

    @staticmethod
    def _feasible(cap: list[int], counts: dict[int, int]) -> bool:
        """Hall's condition: every set of places has room for the cards bound to it."""
        places = len(cap)
        for subset in range(1, 1 << places):
            room = 0
            for p in range(places):
                if subset >> p & 1:
                    room += cap[p]
            need = 0
            for dom, k in counts.items():
                if not dom & ~subset:
                    need += k
            if need > room:
                return False
        return True

    _prepared: tuple[list[list[int]], dict[int, list[int]]] | None = None

    def _prepare(self) -> tuple[list[list[int]], dict[int, list[int]]]:
        """Unseen cards grouped by how many places they may be in, and those places."""
        if self._prepared is None:
            cards = cards_of(self.unknown)
            doms = self._domains(cards)
            places = len(self.capacity)
            choices = {c: [p for p in range(places) if d >> p & 1]
                       for c, d in zip(cards, doms, strict=True)}
            by_size: dict[int, list[int]] = {}
            for c in cards:
                by_size.setdefault(len(choices[c]), []).append(c)
            self._prepared = ([by_size[k] for k in sorted(by_size)], choices)
        return self._prepared

    def _may_have_got(self, receiver: int, candidates: int) -> list[int]:
        """The talon cards ``receiver`` may have been given: not of a suit it is void in."""
        void = self.voids[receiver]
        return [c for c in cards_of(candidates) if not void >> (c >> 3) & 1]

    def _draw_fast(self, rng: random.Random) -> list[int] | None:
        """One quick draw, most constrained cards first; None when it runs into a wall."""
        groups, choices = self._prepare()
        cap = list(self.capacity)
        content = list(self.must)
        taken = 0
        for receiver, candidates, other_weight in self.give_choices:
            cands = self._may_have_got(receiver, candidates & self.unknown)
            c = _pick_given(rng, cands, other_weight, cap[receiver])
            if c >= 0:
                content[receiver] |= 1 << c
                cap[receiver] -= 1
                taken |= 1 << c
        randrange = rng.randrange
        for group in groups:
            cards = list(group)
            rng.shuffle(cards)
            for c in cards:
                if taken >> c & 1:
                    continue
                p = _place(randrange, choices[c], cap)
                if p < 0:
                    return None
                content[p] |= 1 << c
                cap[p] -= 1
        return content

    def _draw(self, rng: random.Random, checked: bool, loose: bool = False
              ) -> list[int] | None:
        places = len(self.capacity)
        cap = list(self.capacity)
        content = list(self.must)
        pool = self.unknown
        cards = cards_of(pool)
        doms = dict(zip(cards, self._domains(cards), strict=True))
        counts: dict[int, int] = {}
        for c in cards:
            counts[doms[c]] = counts.get(doms[c], 0) + 1
        # Hidden gives of talon cards: which (if any) talon card each receiver got.
        for receiver, candidates, other_weight in self.give_choices:
            cands = self._may_have_got(receiver, candidates & pool)
            if checked:
                ok = []
                for c in cands:
                    counts[doms[c]] -= 1
                    cap[receiver] -= 1
                    if self._feasible(cap, counts):
                        ok.append(c)
                    counts[doms[c]] += 1
                    cap[receiver] += 1
                cands = ok
                if cands and not self._feasible(cap, counts):
                    other_weight = 0  # a talon card must have been given on
            c = _pick_given(rng, cands, other_weight, cap[receiver])
            if c >= 0:
                content[receiver] |= 1 << c
                cap[receiver] -= 1
                pool &= ~(1 << c)
                counts[doms[c]] -= 1
        cards = cards_of(pool)
        rng.shuffle(cards)
        cards.sort(key=lambda c: doms[c].bit_count())
        for c in cards:
            dom = doms[c]
            counts[dom] -= 1
            choices = [p for p in range(places) if dom >> p & 1 and cap[p] > 0]
            if checked and len(choices) > 1:
                ok = []
                for p in choices:
                    cap[p] -= 1
                    if self._feasible(cap, counts):
                        ok.append(p)
                    cap[p] += 1
                choices = ok or choices
            if not choices:
                if not loose:
                    return None
                choices = [p for p in range(places) if cap[p] > 0]
                if not choices:
                    return None
            p = _place(rng.randrange, choices, cap)
            content[p] |= 1 << c
            cap[p] -= 1
        return content

    def _bids_ok(self, content: list[int]) -> bool:
        for seat, need in self.needs_marriage.items():
            held = (content[seat] | self.history[seat])
            total = sum(self.mv[s] for s in range(4) if held & KQ[s] == KQ[s])
            if not total or total < need:
                return False
        return True


def declared_must(declarations: Sequence[tuple[int, int, str]], seat: int) -> int:
    """Cards a seat's declarations say it held (the halves not yet led are still there)."""
    m = 0
    for s, suit, kind in declarations:
        if s != seat:
            continue
        if kind == "marriage":
            m |= KQ[suit]
        elif kind == "half":
            m |= (1 << (suit * 8 + RQ)) | (1 << (suit * 8 + RJ))
        elif kind == "aces":
            m |= ACES_MASK
        elif kind == "nines":
            m |= NINES_MASK
    return m


def deck_mask(rules: Rules) -> int:
    return MASK_32 if rules.deck == 32 else MASK_24


def marriage_need(rules: Rules, bid: int) -> int:
    """Marriage points a bidder must have held to bid ``bid`` (0: none; 1: any)."""
    limit = rules.bid_limit_plain
    if limit is None or bid <= limit:
        return 0
    if rules.bid_cap_marriages:
        return bid - limit
    return 1


__all__ = [
    "CARD",
    "SUITS",
    "DealHistory",
    "Knowledge",
    "TrickSeen",
    "deck_mask",
    "declared_must",
    "marriage_need",
    "mask_of_names",
    "suit_bits",
    "voids_from_trick",
]
