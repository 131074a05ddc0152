"""The exchange: the declarer takes the talon into the hand and passes cards on (one to
each other player, ``give``; face down, ``discard``; one to the opponent and one to the
bank, ``bank``).  Before the first card goes the declarer may still concede.

The redeal questions due after the talon (a poor talon, four nines) and after the
exchange (a low hand, four nines) are asked here; the answers resume in :mod:`.ask`.
"""

from __future__ import annotations

from .. import actions as A
from ..actions import Action
from ..cards import cards_of, mask_points
from ..scoring import concede
from ..state import EXCHANGE, State
from . import contract
from .base import Phase, ask_questions, ask_redeal

#: Who gets a card in the exchange, besides a seat: a discard, the bank.
DISCARD = -1
BANK = -2


def take_talon(g: State) -> None:
    """The declarer takes the chosen talon into the hand."""
    r = g.rules
    d = g.declarer
    t = g.talon[g.chosen]
    g.hands[d] |= t
    g.received[d].extend(cards_of(t))
    # 003 l.43: the declarer who got the talon at the forced 100 may cancel the auction
    # when the talon is poor (not after raising the bid himself).
    low_talon = (
        r.redeal_low_talon is not None
        and r.redeal_low_ask
        and r.forced_bid
        and not g.forced_declarer
        and g.contract == r.opening_bid
        and mask_points(t) < r.redeal_low_talon
    )
    nines = r.four_nines == "redeal-after-talon"
    if (low_talon or nines) and ask_redeal(g, "exchange", nines=nines, low_talon=low_talon):
        return
    start(g)


def start(g: State) -> None:
    r = g.rules
    d = g.declarer
    if r.exchange == "give":
        g.exch_left = list(g.order_from(d)[1:])
    elif r.exchange == "discard":
        g.exch_left = [DISCARD] * r.talon_size
    else:  # bank: one card to the opponent, one to the bank
        g.exch_left = [g.nxt[d], BANK]
    g.phase = EXCHANGE
    g.to_act = d


def after(g: State) -> None:
    """The cards are passed on: the questions about a low hand or four nines, if due;
    then the contract."""
    r = g.rules
    low = r.redeal_low_hand is not None and r.redeal_low_hand_at != "deal"
    nines = r.four_nines == "redeal-after-exchange"
    if not ask_questions(g, "contract", low_hand=low, nines=nines):
        contract.start(g)


def _cards_to_pass(g: State) -> int:
    r = g.rules
    if r.exchange == "give":
        return g.nactive - 1
    if r.exchange == "discard":
        return r.talon_size
    return 2


class ExchangePhase(Phase):
    def legal(self, g: State, p: int) -> list[Action]:
        out = []
        if (g.rules.concede and contract.may_concede(g, p)
                and len(g.exch_left) == _cards_to_pass(g)):
            out.append(A.CONCEDE_ACTION)
        cards = cards_of(g.hands[p])
        for target in sorted(set(g.exch_left)):
            if target == DISCARD:
                out += [A.DISCARD_OF[c] for c in cards]
            elif target == BANK:
                out += [A.BANK_OF[c] for c in cards]
            else:
                out += [A.GIVE_OF[c][target] for c in cards]
        return out

    def apply(self, g: State, p: int, a: Action) -> None:
        if a.kind == A.CONCEDE:
            concede(g, p)
            return
        c = a.card
        g.hands[p] &= ~(1 << c)
        if a.kind == A.GIVE:
            g.exch_left.remove(a.target)
            g.hands[a.target] |= 1 << c
            g.received[a.target].append(c)
            g.given.append((c, a.target))
        elif a.kind == A.DISCARD:
            g.exch_left.remove(DISCARD)
            g.discards |= 1 << c
        else:
            g.exch_left.remove(BANK)
            g.bank |= 1 << c
        if not g.exch_left:
            after(g)

    def why(self, g: State, p: int, a: Action) -> str:
        if a.kind == A.GIVE:
            return f"{a}: seat {a.target} cannot receive a card now"
        return ""
