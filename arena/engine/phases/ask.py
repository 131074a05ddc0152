"""The redeal questions: a seat holding four nines (phase ``nines``), a low hand or a
poor talon (phase ``redeal``) is asked ``redeal`` or ``pass``, each once, in seat order.
A redeal throws the deal in; when everyone has declined the deal goes on where it was:
the auction (questions after the deal), the exchange (after the talon) or the contract
(after the exchange).  The questions are queued by :func:`.base.ask_redeal`."""

from __future__ import annotations

from .. import actions as A
from ..actions import Action
from ..state import State
from . import auction, contract, exchange
from .base import Phase, ask_questions, redeal


def after_deal(g: State) -> None:
    """The cards are dealt: the questions due before the auction, then the auction."""
    r = g.rules
    low = r.redeal_low_hand is not None and r.redeal_low_hand_at != "exchange"
    nines = r.four_nines == "redeal-before-auction"
    if ask_questions(g, "auction", low_hand=low, nines=nines):
        # Whoever is asked has looked at the cards: no blind bid for them.
        for s, _, _ in g.ask_queue:
            g.looked |= 1 << s
        return
    auction.start(g)


class AskPhase(Phase):
    def __init__(self, redeal_first: bool) -> None:
        #: Four nines are asked ``redeal`` first; a low hand ``pass`` first (what a bot
        #: without an opinion picks).
        self.choices = ([A.REDEAL_ACTION, A.PASS_ACTION] if redeal_first
                        else [A.PASS_ACTION, A.REDEAL_ACTION])

    def legal(self, g: State, p: int) -> list[Action]:
        return list(self.choices)

    def apply(self, g: State, p: int, a: Action) -> None:
        _, _, reason = g.ask_queue[0]
        g.ask_queue = g.ask_queue[1:]
        if a.kind == A.REDEAL:
            redeal(g, reason)
            return
        if g.ask_queue:
            g.phase = g.ask_queue[0][1]
            g.to_act = g.ask_queue[0][0]
            return
        after = g.ask_after
        if after == "auction":
            auction.start(g)
        elif after == "exchange":
            exchange.start(g)
        else:
            contract.start(g)
