"""Selling the talon before it is taken: the Estonian sale (``sale``: the declarer offers
the talon, another player buys it by bidding at least one step more) and the re-buy
(``rebuy``: others may buy a talon shown for 120, 240, ...).  Buyers answer once each, in
seat order from the declarer's left, each outbidding the one before."""

from __future__ import annotations

from .. import actions as A
from ..actions import Action
from ..state import SALE, State
from . import exchange
from .base import Phase, bid_cap, may_bid


def open_sale(g: State, rebuy: bool) -> None:
    r = g.rules
    q = [s for s in g.order_from(g.declarer)[1:] if may_bid(g, s)]
    g.sale_queue = q
    g.sale_min = (g.contract // 120 + 1) * 120 if rebuy else g.contract + r.bid_step
    if not q:
        exchange.take_talon(g)
        return
    g.phase = SALE
    g.to_act = q[0]


class SaleOfferPhase(Phase):
    """The declarer, having looked at the talon, sells it or keeps it."""

    def legal(self, g: State, p: int) -> list[Action]:
        return [A.SELL_ACTION, A.KEEP_ACTION]

    def apply(self, g: State, p: int, a: Action) -> None:
        if a.kind == A.SELL:
            open_sale(g, rebuy=False)
        else:
            exchange.take_talon(g)


class SalePhase(Phase):
    """A buyer passes or buys."""

    def legal(self, g: State, p: int) -> list[Action]:
        r = g.rules
        hand = g.hands[p]
        if g.talon_public:  # a buyer's ceiling counts the marriages it could hold with it
            hand |= g.talon[0]
        step = 120 if r.rebuy else r.bid_step
        return [A.PASS_ACTION] + [A.buy(v) for v in range(g.sale_min, bid_cap(r, hand) + 1, step)]

    def apply(self, g: State, p: int, a: Action) -> None:
        r = g.rules
        g.auction_log.append((p, a, False))
        g.sale_queue.pop(0)
        if a.kind == A.BUY:
            # The buyer saw its own hand: a blind contract stays blind only for its bidder.
            g.blind_won = False
            g.declarer = p
            g.contract = a.value
            g.bid = a.value
            g.bidder = p
            g.talon_seen |= 1 << p
            step = 120 if r.rebuy else r.bid_step
            g.sale_min = a.value + step
        if g.sale_queue:
            g.to_act = g.sale_queue[0]
        else:
            exchange.take_talon(g)
