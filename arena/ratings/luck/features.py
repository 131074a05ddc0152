"""What the luck model reads: the deal of each deck, card features and their exact means.

A deal is described from one seat's side: its own hand, the hands of the seats after it
(in playing order) and the talon.  Every feature is a product of "card c lies in part p"
indicators (one card: "I hold the ace of hearts"; two cards: "I hold the marriage of
hearts", "my king of hearts finds its queen in the talon").  That restriction is what
makes the luck correction exact: under a uniform shuffle, the chance that m given cards
lie in given parts is a ratio of falling factorials, so the mean of every feature over all
shuffles is known in closed form and no sampling is needed to centre it.

The dealing order is the public one of ``docs/shuffle.md`` (section 5): the seats from the
left of the dealer take consecutive blocks of ``hand_size`` cards, the talons the rest.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from arena.engine.cards import DECK_24, DECK_32, RA, RK, RQ, RT
from arena.engine.options import DealShapeOptions

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


@dataclass(frozen=True)
class DealShape(DealShapeOptions):
    """How a deck is cut into hands and talon: what a model's features depend on.

    Rules with the same shape (classic with any barrel, deal limit or scoring options, the
    Estonian game for three) share features, so one model serves all of them; the model
    still records the preset it was trained on. The fields are the engine's options marked
    ``shape = true`` in ``options.toml``; ``DealShape.of(rules)`` takes them from rules.
    """

    @property
    def key(self) -> str:
        """A short name, e.g. ``3p-24c-7h-1x3`` (``-sit`` when the dealer sits out)."""
        sit = "-sit" if self.dealer_sits_out else ""
        cards = f"{self.players}p-{self.deck}c-{self.hand_size}h"
        return f"{cards}-{self.talons}x{self.talon_size}{sit}"

    @property
    def active(self) -> int:
        return self.players - 1 if self.dealer_sits_out else self.players

    @property
    def cards(self) -> tuple[int, ...]:
        return DECK_24 if self.deck == 24 else DECK_32

    @cached_property
    def part_sizes(self) -> tuple[int, ...]:
        """Cards in each part: the active hands in dealing order, then one merged talon."""
        return (*([self.hand_size] * self.active), self.talon_size * self.talons)

    @cached_property
    def position_part(self) -> IntArray:
        """Part (0 = forehand's hand, ..., ``active`` = talon) of each position of a deck."""
        out = np.empty(self.deck, dtype=np.int64)
        pos = 0
        for part, size in enumerate(self.part_sizes):
            out[pos : pos + size] = part
            pos += size
        return out

    @cached_property
    def card_slot(self) -> IntArray:
        """Engine card number -> index 0..deck-1 in canonical order (-1: not in the deck)."""
        out = np.full(32, -1, dtype=np.int64)
        out[list(self.cards)] = np.arange(self.deck)
        return out


@dataclass(frozen=True)
class FeatureSet:
    """The features of one seat's view of a deal, as (card slot, relative part) conditions.

    Relative parts: 0 is the seat's own hand, 1..active-1 the hands of the seats after it
    in dealing order, ``active`` the talon.
    """

    shape: DealShape
    names: tuple[str, ...]
    #: (n_features, 2) card slots, -1 for an unused second card.
    cards: IntArray
    #: (n_features, 2) relative parts of those cards.
    parts: IntArray

    @property
    def size(self) -> int:
        return len(self.names)

    @cached_property
    def means(self) -> FloatArray:
        """Each feature's exact mean over uniformly shuffled decks.

        m distinct cards land in given parts with probability
        ``prod_p falling(size_p, k_p) / falling(deck, m)`` (``k_p`` of them asked in part p).
        """
        sizes = self.shape.part_sizes
        out = np.empty(self.size)
        for f in range(self.size):
            wanted = [int(p) for c, p in zip(self.cards[f], self.parts[f], strict=True) if c >= 0]
            num = 1.0
            taken: dict[int, int] = {}
            for p in wanted:
                k = taken.get(p, 0)
                num *= max(0, sizes[p] - k)
                taken[p] = k + 1
            den = 1.0
            for i in range(len(wanted)):
                den *= self.shape.deck - i
            out[f] = num / den
        return out

    def values(self, owner: IntArray) -> FloatArray:
        """Features of every seat role for a batch of deals.

        ``owner`` is (deals, deck): the absolute part (0 = forehand ... talon) of each card
        slot.  Returns (deals, active, features): row r is the view of the seat r places
        after forehand.
        """
        active = self.shape.active
        deals = owner.shape[0]
        out = np.empty((deals, active, self.size))
        c0, c1 = self.cards[:, 0], self.cards[:, 1]
        p0, p1 = self.parts[:, 0], self.parts[:, 1]
        two = c1 >= 0
        for r in range(active):
            rel = np.where(owner < active, (owner - r) % active, active)
            first = rel[:, c0] == p0
            second = np.where(two, rel[:, np.where(two, c1, 0)] == p1, True)
            out[:, r, :] = first & second
        return out


def feature_set(shape: DealShape) -> FeatureSet:
    """Own hand, the next hands and the talon card by card; marriages in every hand; the
    seat's ace-ten pairs; and its marriages the talon would complete."""
    active = shape.active
    slot = shape.card_slot
    names: list[str] = []
    cards: list[tuple[int, int]] = []
    parts: list[tuple[int, int]] = []
    from arena.engine.cards import CARD_NAMES

    talon = active
    card_parts = [0, *range(1, active - 1)] if active > 2 else [0]
    if shape.talon_size:
        card_parts.append(talon)
    for p in card_parts:
        for c in shape.cards:
            names.append(f"{CARD_NAMES[c]}@{p}")
            cards.append((int(slot[c]), -1))
            parts.append((p, p))
    for s in range(4):
        k, q, a, t = (int(slot[s * 8 + r]) for r in (RK, RQ, RA, RT))
        for p in range(active):
            names.append(f"KQ{'CSHD'[s]}@{p}")
            cards.append((k, q))
            parts.append((p, p))
        names.append(f"AT{'CSHD'[s]}@0")
        cards.append((a, t))
        parts.append((0, 0))
        if shape.talon_size:
            names.append(f"K{'CSHD'[s]}@0+Q@talon")
            cards.append((k, q))
            parts.append((0, talon))
            names.append(f"Q{'CSHD'[s]}@0+K@talon")
            cards.append((q, k))
            parts.append((0, talon))
    return FeatureSet(shape, tuple(names), np.array(cards, dtype=np.int64),
                      np.array(parts, dtype=np.int64))


def deck_owner(shape: DealShape, decks: IntArray) -> IntArray:
    """(deals, deck) engine card numbers in dealing order -> part of each card slot."""
    deals = decks.shape[0]
    owner = np.empty((deals, shape.deck), dtype=np.int64)
    rows = np.arange(deals)[:, None]
    owner[rows, shape.card_slot[decks]] = shape.position_part[None, :]
    return owner
