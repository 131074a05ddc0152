"""The auction: who plays the deal and for how much.

Bids rise by ``bid_step`` from the opening bid (forced on the opener with
``forced_bid``); a seat that passes is out; the auction ends when all but the high
bidder have passed, or is redealt when everyone passes.  Some deals have no auction: a
barrel player who must take the talon (``barrel_mode: talon``), a golden deal, German
play without a talon.  A bid blind, before looking at the hand, is :mod:`.blind`.
"""

from __future__ import annotations

from .. import actions as A
from ..actions import Action
from ..cards import KQ, mask_points
from ..golden import golden_now, golden_seat
from ..state import AUCTION, BLIND, State
from . import play, talon
from .base import Phase, absolute_cap, bid_cap, may_bid, redeal


def start(g: State) -> None:
    """After the deal (and any redeal question): the auction, or a declarer the rules name."""
    r = g.rules
    if not r.auction:
        play.start(g)
        return
    # The barrel player who must take the talon without an auction.
    if r.barrel is not None and r.barrel_mode == "talon":
        for s in g.order_from(g.forehand):
            if g.barrel_on[s]:
                auto_declarer(g, s, r.barrel_min_contract)
                return
    if r.golden_round and golden_now(g):
        g.golden = True
        auto_declarer(g, golden_seat(g), 120)
        return
    if r.blind_bid:
        fh = g.forehand
        if r.blind_by == "anyone":
            may = 0
            for s in g.active:
                if may_blind(g, s):
                    may |= 1 << s
            g.unseen = may & ~g.looked
        elif may_blind(g, fh) and not g.looked >> fh & 1:
            g.unseen = 1 << fh
        if g.unseen >> fh & 1:
            g.phase = BLIND
            g.to_act = fh
            return
    open_auction(g)


def auto_declarer(g: State, seat: int, contract: int) -> None:
    """The rules name the declarer and the contract: the talon comes next."""
    g.declarer = seat
    g.contract = contract
    g.bid = contract
    g.bidder = seat
    g.forced_declarer = True
    g.records[-1].events.append(("auto", seat, A.bid(contract)))
    talon.start(g)


def may_blind(g: State, seat: int) -> bool:
    r = g.rules
    if r.blind_min_score is not None and g.scores[seat] < r.blind_min_score:
        return False
    return may_bid(g, seat)


def opener(g: State) -> int:
    return g.dealer if g.rules.opener == "dealer" else g.forehand


def open_auction(g: State) -> None:
    r = g.rules
    g.phase = AUCTION
    first = opener(g)
    if r.forced_bid and not may_bid(g, first):
        # 003: a player at the floor "always passes"; the forced bid moves on clockwise.
        for s in g.order_from(first)[1:]:
            if may_bid(g, s):
                first = s
                break
        else:
            redeal(g, "nobody may bid")
            return
    if r.forced_bid:
        forced = A.bid(r.opening_bid)
        g.bid = r.opening_bid
        g.bidder = first
        g.auction_log.append((first, forced, True))
        g.records[-1].events.append(("auto", first, forced))
        nxt = next_bidder(g, first)
        if nxt is None:
            g.to_act = None
            end(g)
        elif g.unseen:
            turn(g, nxt)
        else:
            g.to_act = nxt
    elif g.unseen:
        turn(g, first)
    else:
        g.to_act = first


def turn(g: State, seat: int) -> None:
    """Give ``seat`` the turn in the auction: a seat that has not looked at its hand yet
    first chooses ``look`` or a blind bid (it looks by itself when no blind bid is left
    to make)."""
    g.to_act = seat
    bit = 1 << seat
    if g.unseen & bit and not g.blind_mask & bit:
        if blind_bids(g, seat):
            g.phase = BLIND
            return
        g.unseen &= ~bit
    g.phase = AUCTION


def min_bid(g: State) -> int:
    return g.bid + g.rules.bid_step if g.bidder >= 0 else g.rules.opening_bid


def turn_after(seat: int, nxt: tuple[int, ...], passed: list[bool], bidder: int) -> int:
    """Who bids after ``seat``: the next seat clockwise that has not passed, or -1 when
    the turn comes back to the high bidder (everyone else passed since its bid).  Public:
    the search bot's model of the auction turns the same way."""
    s = nxt[seat]
    while s != seat:
        if s == bidder:
            return -1
        if not passed[s]:
            return s
        s = nxt[s]
    return -1


def bidding_over(active: tuple[int, ...], passed: list[bool], bidder: int) -> bool:
    """Whether the auction is over: everyone passed, or all but the high bidder."""
    live = [s for s in active if not passed[s]]
    if bidder < 0:
        return not live
    return live == [bidder] or not live


def next_bidder(g: State, seat: int) -> int | None:
    """The next seat to bid, or None when the auction is over."""
    s = turn_after(seat, g.nxt, g.passed, g.bidder)
    return None if s < 0 else s


def end(g: State) -> None:
    """The auction is over: the high bidder declares (or everybody passed: a redeal)."""
    r = g.rules
    if g.bidder < 0:
        redeal(g, "everybody passed")
        return
    g.declarer = g.bidder
    g.contract = g.bid
    if g.blind_mask >> g.declarer & 1:
        g.blind_won = True
    g.blind_mask = 0
    g.unseen = 0
    if (
        r.redeal_low_talon is not None
        and not r.redeal_low_ask
        and r.forced_bid
        and g.contract == r.opening_bid
        and mask_points(g.talon[0]) < r.redeal_low_talon
    ):
        redeal(g, f"the talon holds fewer than {r.redeal_low_talon} points")
        return
    talon.start(g)


def blind_cap(g: State) -> int:
    """A blind bidder cannot show a marriage: the plain limit (and ``bid_max``)."""
    r = g.rules
    cap = r.bid_limit_plain if r.bid_limit_plain is not None else absolute_cap(r)
    if r.bid_max is not None:
        cap = min(cap, r.bid_max)
    return cap


def blind_bids(g: State, p: int) -> tuple[Action, ...]:
    """The blind bids open to ``p`` now (before the auction opens: forehand's first
    choice, made before the forced bid is placed)."""
    r = g.rules
    if g.auction_log:
        lo = min_bid(g)
    else:
        lo = r.opening_bid
        if r.forced_bid and opener(g) != p:
            lo += r.bid_step
    top = blind_cap(g)
    fixed = r.blind_fixed_bid
    if fixed is not None:
        return (A.blind(fixed),) if lo <= fixed <= top else ()
    return A.value_range(A.BLIND, lo, top, r.bid_step)


def bid(g: State, p: int, a: Action) -> None:
    """``p`` passes or bids (blind or not)."""
    r = g.rules
    g.auction_log.append((p, a, False))
    if a.kind == A.PASS:
        g.passed[p] = True
        if g.unseen:
            # A seat that passes looks at its cards.
            g.blind_mask &= ~(1 << p)
            g.unseen &= ~(1 << p)
    else:
        prev = g.bidder
        if (
            g.blind_mask
            and prev >= 0
            and prev != p
            and g.blind_mask >> prev & 1
            and r.blind_outbid == "look"
        ):
            # 003 l.53: an outbid blind bidder looks and bids on as usual, not doubled.
            g.blind_mask &= ~(1 << prev)
            g.unseen &= ~(1 << prev)
        g.bid = a.value
        g.bidder = p
        if r.show_marriage and r.bid_limit_plain is not None and a.value > r.bid_limit_plain:
            for s in range(4):
                if g.hands[p] & KQ[s] == KQ[s] and (p, s) not in g.shown:
                    g.shown.append((p, s))
    if bidding_over(g.active, g.passed, g.bidder):
        end(g)
        return
    nxt = next_bidder(g, p)
    if nxt is None:
        end(g)
    elif g.unseen:
        turn(g, nxt)
    else:
        g.to_act = nxt


def why_bid(g: State, p: int, a: Action) -> str:
    """Why a bid or a blind bid is refused (in the auction and before it)."""
    r = g.rules
    if a.kind not in (A.BID, A.BLIND):
        return ""
    floor = r.minus_may_not_bid
    if floor is not None and g.scores[p] <= floor:
        return f"{a}: a player at {g.scores[p]} (at or below {floor}) may not bid"
    lo = min_bid(g)
    if a.value < lo:
        return f"{a}: the bid must be at least {lo}"
    if a.value % r.bid_step:
        return f"{a}: bids go in steps of {r.bid_step}"
    if a.kind == A.BID and g.blind_mask >> p & 1:
        return f"{a}: seat {p} bids blind and has not looked at the hand"
    if a.kind == A.BLIND and not g.unseen >> p & 1:
        if r.blind_by == "forehand":
            return f"{a}: only forehand may bid blind, before looking"
        return f"{a}: only a player who has not looked at the hand may bid blind"
    fixed = r.blind_fixed_bid
    if a.kind == A.BLIND and fixed is not None and a.value != fixed:
        return f"{a}: a blind bid is exactly {fixed}"
    cap = bid_cap(r, g.hands[p]) if a.kind == A.BID else blind_cap(g)
    return f"{a}: above the highest bid allowed for this hand ({cap})"


class AuctionPhase(Phase):
    def legal(self, g: State, p: int) -> list[Action]:
        out = [A.PASS_ACTION]
        if not may_bid(g, p):
            return out
        if g.blind_mask >> p & 1:
            return out + list(blind_bids(g, p))
        r = g.rules
        return out + list(A.value_range(A.BID, min_bid(g), bid_cap(r, g.hands[p]), r.bid_step))

    def apply(self, g: State, p: int, a: Action) -> None:
        bid(g, p, a)

    def why(self, g: State, p: int, a: Action) -> str:
        return why_bid(g, p, a)
