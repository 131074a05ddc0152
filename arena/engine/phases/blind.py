"""The blind bid (``blind_bid``): before looking at the hand, forehand (or, with
``blind_by: anyone``, each player) chooses ``look`` or ``blind N``; a blind contract
counts ``blind_multiplier`` times.  The choice comes first of all, before the forced
bid is placed; a seat offered it later in the auction looks by itself when no blind bid
is left to make (:func:`.auction.turn`)."""

from __future__ import annotations

from .. import actions as A
from ..actions import Action
from ..state import AUCTION, State
from . import auction
from .base import Phase


class BlindPhase(Phase):
    def legal(self, g: State, p: int) -> list[Action]:
        return [A.LOOK_ACTION, *auction.blind_bids(g, p)]

    def apply(self, g: State, p: int, a: Action) -> None:
        bit = 1 << p
        if a.kind == A.LOOK:
            g.unseen &= ~bit
            if g.auction_log:
                g.phase = AUCTION  # the same seat now bids having seen its cards
            else:
                auction.open_auction(g)
            return
        g.blind_mask |= bit
        g.phase = AUCTION
        if g.auction_log:
            auction.bid(g, p, a)
            return
        # The first bid of the deal: the forced bid goes in first when another seat
        # holds it, then the blind bid outbids it.
        r = g.rules
        first = auction.opener(g)
        if r.forced_bid and first != p:
            forced = A.bid(r.opening_bid)
            g.auction_log.append((first, forced, True))
            g.records[-1].events.append(("auto", first, forced))
        g.bid = a.value
        g.bidder = p
        g.auction_log.append((p, a, False))
        nxt = auction.next_bidder(g, p)
        if nxt is None:
            g.to_act = None
            auction.end(g)
        else:
            auction.turn(g, nxt)

    def why(self, g: State, p: int, a: Action) -> str:
        return auction.why_bid(g, p, a)
