"""Simulating the rest of a deal from any step before the first card.

The decisions before the play (bids, sale, talon, cards given away, contract, concession,
trump) are judged by simulation: in each sampled world the deal is finished under each
candidate, and the candidate with the best mean value of the outcome is taken.  In a world
the other players decide as a plain card player would (the ``greedy`` model below: bid
while the estimate of the hand covers the bid, keep the talon, give away the least useful
cards, raise only with a margin), and the play is a rollout of the default policy
(:mod:`.rollout`).  The seat's own later steps in a world follow the same simple rules:
they will be searched properly when they come.

Every outcome is scored by the rules (:class:`~.scoring.Evaluator`), so what a bid is
worth follows from the contract, the failure cost, the talon, the opponents' chances, the
barrel and the target, rather than from fixed thresholds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from arena.engine.cards import CARD_POINTS, SUIT_MASK
from arena.engine.phases.auction import bidding_over, turn_after
from arena.engine.phases.base import bid_cap
from arena.engine.phases.play import first_leader
from arena.engine.rules import Rules

from .lean import LeanRules, PlayState, mask_points
from .rollout import _cheapest, fast_playout
from .scoring import DealContext, Evaluator

EstimateFn = Callable[[int], int]


@dataclass
class AuctionState:
    """Where the auction stands: the high bid, its bidder, who passed, who is to bid."""

    active: list[int]
    bid: int
    bidder: int
    passed: set[int]
    to_act: int
    opening: int
    step: int

    def copy(self) -> AuctionState:
        return AuctionState(self.active, self.bid, self.bidder, set(self.passed), self.to_act,
                            self.opening, self.step)


def run_auction(a: AuctionState, maxes: dict[int, int]) -> tuple[int, int]:
    """Finish an auction where each seat bids the minimum while it is within its maximum.

    Returns (declarer, contract), or (-1, 0) when everybody passed (a redeal).  The turn
    goes round and the auction ends as the engine's does (:func:`turn_after`,
    :func:`bidding_over`).
    """
    active = tuple(a.active)
    seats = [0] * (max(active) + 1)
    for i, s in enumerate(active):
        seats[s] = active[(i + 1) % len(active)]
    nxt = tuple(seats)
    passed = [s in a.passed for s in range(len(seats))]
    bid, bidder, p = a.bid, a.bidder, a.to_act
    for _ in range(400):
        lo = bid + a.step if bidder >= 0 else a.opening
        if lo <= maxes.get(p, -1):
            bid, bidder = lo, p
        else:
            passed[p] = True
        if bidding_over(active, passed, bidder):
            break
        p = turn_after(p, nxt, passed, bidder)
        if p < 0:
            break
    return (bidder, bid) if bidder >= 0 else (-1, 0)


@dataclass
class World:
    """One sampled deal: every hand as it is now and the talon(s) not yet taken."""

    hands: list[int]
    talons: list[int]
    #: Points out of the hands that the last trick's taker or the declarer will add.
    extra_last: int
    extra_declarer: int
    hidden: int
    weight: float = 1.0


@dataclass
class DealSim:
    """Finishes deals in sampled worlds under the model of the players described above."""

    rules: Rules
    lr: LeanRules
    costs: list[int]
    estimate: EstimateFn
    active: list[int]
    dealer: int
    n: int
    raise_margin: int = 15
    talon_card_value: int = 4
    _order: dict[int, list[int]] = field(default_factory=dict)

    def order_from(self, first: int) -> list[int]:
        o = self._order.get(first)
        if o is None:
            a = self.active
            i = a.index(first)
            o = self._order[first] = list(a[i:] + a[:i])
        return o

    def forehand(self) -> int:
        return (self.dealer + 1) % self.n

    # ------------------------------------------------------------------ the model
    def model_max(self, hand: int, talon_known: bool = False) -> int:
        """The highest bid the model player makes with ``hand``."""
        est = self.estimate(hand)
        if not talon_known:
            est += self.rules.talon_size * self.talon_card_value
        return min(est, bid_cap(self.rules, hand))

    def exchange(self, hands: list[int], d: int) -> tuple[int, int]:
        """The declarer (holding the talon) passes on its least useful cards, in place.

        Returns the points put aside to the declarer (discards) and to the last trick
        (a bank card).
        """
        r = self.rules
        costs = self.costs
        if r.exchange == "give":
            for t in self.order_from(d)[1:]:
                c = _cheapest(hands[d], hands[d], costs)
                hands[d] &= ~(1 << c)
                hands[t] |= 1 << c
            return 0, 0
        if r.exchange == "discard":
            pts = 0
            for _ in range(r.talon_size):
                c = _cheapest(hands[d], hands[d], costs)
                hands[d] &= ~(1 << c)
                pts += CARD_POINTS[c]
            return pts, 0
        if r.exchange == "bank":
            c = _cheapest(hands[d], hands[d], costs)
            hands[d] &= ~(1 << c)
            bank = CARD_POINTS[c]
            c = _cheapest(hands[d], hands[d], costs)
            hands[d] &= ~(1 << c)
            hands[self.order_from(d)[1]] |= 1 << c
            return 0, bank
        return 0, 0

    def model_contract(self, hand: int, contract: int) -> int:
        r = self.rules
        if not r.raise_contract:
            return contract
        est = self.estimate(hand)
        best = contract
        v = contract
        cap = max(contract, bid_cap(r, hand))
        while v <= cap:
            if v + self.raise_margin <= est:
                best = v
            v += r.bid_step
        return best

    def model_trump(self, hand: int) -> int:
        best, key = 0, (-1, -1)
        for s in range(4):
            m = hand & SUIT_MASK[s]
            k = (m.bit_count(), mask_points(m))
            if k > key:
                best, key = s, k
        return best

    def first_leader(self, d: int) -> int:
        return first_leader(self.rules, d, self.dealer, tuple(self.active), self.forehand())

    # ------------------------------------------------------------------ playing out
    def play(self, hands: list[int], d: int, *, trump: int = -1, extra_last: int = 0,
             extra_declarer: int = 0, hidden: int = 0) -> PlayState:
        """Play the deal from its first card with the default policy."""
        st = PlayState.new(self.lr, self.active, self.n, hands, self.first_leader(d), d)
        if trump >= 0:
            st.trump = trump
            st.trump_by = d
        st.extra_last = extra_last
        st.extra_declarer = extra_declarer
        team = tuple(s for s in self.active if s != d) if d >= 0 else None
        return fast_playout(st, self.costs, team, hidden)

    def declare_and_play(self, world: World, d: int, *, talon_index: int = 0,
                         skip_exchange: bool = False) -> tuple[PlayState, int]:
        """From the end of the auction: take the talon, exchange, name a trump, play.

        Returns the finished position and the declarer's hand after the exchange (what
        the model's raise looks at, :meth:`model_contract`).
        """
        r = self.rules
        hands = list(world.hands)
        extra_last = world.extra_last
        extra_declarer = world.extra_declarer
        hidden = world.hidden
        if world.talons and r.exchange != "none" and d >= 0:
            t = world.talons[talon_index] if talon_index < len(world.talons) else 0
            hands[d] |= t
            spare = 0
            for i, other in enumerate(world.talons):
                if i != talon_index:
                    spare |= other
            hidden |= spare
            # As the engine scores them: a bank holds the spare talon, and a spare talon
            # going to the last trick counts on its own.
            if r.exchange == "bank":
                extra_last += mask_points(spare)
            if r.spare_talon == "last-trick":
                extra_last += mask_points(spare)
        if r.exchange != "none" and d >= 0 and not skip_exchange:
            disc, bank = self.exchange(hands, d)
            extra_declarer += disc
            extra_last += bank
        kept = hands[d] if d >= 0 else 0
        trump = self.model_trump(kept) if r.fixed_trump and d >= 0 else -1
        st = self.play(hands, d, trump=trump, extra_last=extra_last,
                       extra_declarer=extra_declarer, hidden=hidden)
        return st, kept


def evaluator_for(ctx: DealContext, me: int, d: int, contract: int,
                  cache: dict[tuple[int, int], Evaluator], blind: bool = False) -> Evaluator:
    key = (d, contract * 2 + blind)
    ev = cache.get(key)
    if ev is None:
        ev = cache[key] = Evaluator(ctx.with_contract(d, contract, blind_won=blind), me)
    return ev


def weighted_mean(values: Sequence[float], weights: Sequence[float]) -> float:
    total = sum(weights)
    return sum(v * w for v, w in zip(values, weights, strict=True)) / total if total else 0.0
