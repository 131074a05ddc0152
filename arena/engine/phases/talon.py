"""The talon, once the auction is won: turned face up for everyone (``talon_public``) or
shown to the declarer alone, chosen from two (the two-player presets), offered for sale,
and taken (:mod:`.exchange`).  Without a talon the play starts at once."""

from __future__ import annotations

from .. import actions as A
from ..actions import Action
from ..state import SALE_OFFER, TALON_CHOICE, State
from . import exchange, play, sale
from .base import Phase


def start(g: State) -> None:
    r = g.rules
    if r.exchange == "none":
        play.start(g)
        return
    if r.talons == 2:
        g.phase = TALON_CHOICE
        g.to_act = g.declarer
        return
    if r.talon_public and not hidden(g):
        g.talon_public = True
    g.talon_seen |= 1 << g.declarer
    if r.sale and not g.forced_declarer:
        g.phase = SALE_OFFER
        g.to_act = g.declarer
        return
    if r.rebuy and g.talon_public and not g.forced_declarer:
        sale.open_sale(g, rebuy=True)
        return
    exchange.take_talon(g)


def hidden(g: State) -> bool:
    """Whether a talon that is normally shown stays with the declarer this time."""
    r = g.rules
    if g.blind_won and r.blind_hides_talon:
        return True
    # 003 l.57: a talon taken at the bid of 100 is not shown.
    return r.hide_talon_at_opening and not g.forced_declarer and g.contract == r.opening_bid


class TalonChoicePhase(Phase):
    """Two talons: the declarer takes one (``talon 1`` or ``talon 2``)."""

    def legal(self, g: State, p: int) -> list[Action]:
        return [A.talon(k + 1) for k in range(len(g.talon))]

    def apply(self, g: State, p: int, a: Action) -> None:
        r = g.rules
        idx = a.value - 1
        g.chosen = idx
        if r.talon_public and not hidden(g):
            g.talon_public = True
        g.talon_seen |= 1 << p
        g.spare = g.talon[1 - idx]
        if r.exchange == "bank":
            g.bank |= g.spare
        exchange.take_talon(g)
