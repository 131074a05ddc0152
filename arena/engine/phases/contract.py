"""The contract, once the talon is taken and the cards passed on: the declarer raises it
(``raise_contract``) or concedes (``concede``), then names the trump (``fixed_trump``).

A concession is also open at the start of the exchange (:mod:`.exchange`); whether it is
allowed, and why not, is decided here for both.
"""

from __future__ import annotations

from .. import actions as A
from ..actions import Action
from ..scoring import concede
from ..state import CONTRACT, EXCHANGE, TRUMP, State
from . import play
from .base import Phase, bid_cap


def start(g: State) -> None:
    """The declarer fixes the contract, unless the rules named the contract (a barrel
    deal) or allow no raise."""
    barrel_forced = g.forced_declarer and not g.golden
    if g.rules.raise_contract and not barrel_forced:
        g.phase = CONTRACT
        g.to_act = g.declarer
        return
    start_trump(g)


def start_trump(g: State) -> None:
    if g.rules.fixed_trump:
        g.phase = TRUMP
        g.to_act = g.declarer
        return
    play.start(g)


def contract_cap(g: State) -> int:
    return max(g.contract, bid_cap(g.rules, g.hands[g.declarer]))


def may_concede(g: State, seat: int) -> bool:
    """Whether the declarer ``seat`` may concede now (the rules allowing a concession)."""
    r = g.rules
    lim = r.concede_limit
    if lim is not None and g.concessions[seat] >= lim:
        return False
    if r.concede_free_on_barrel and r.concede_free_in_golden:
        return True
    # 003 l.49/50: a concession that costs nothing may be barred while a player sits
    # on the barrel or in the golden round.
    free = not r.concede_declarer_loses and not (
        lim is not None and g.concessions[seat] + 1 >= lim and r.concede_limit_penalty
    )
    if not free:
        return True
    if not r.concede_free_on_barrel and any(g.barrel_on):
        return False
    return r.concede_free_in_golden or not g.golden


def why_concede(g: State, p: int) -> str:
    """Why ``p`` may not concede now (asked in any phase)."""
    r = g.rules
    if not r.concede:
        return "concede: these rules do not allow conceding"
    if g.phase in (EXCHANGE, CONTRACT) and p == g.declarer:
        if r.concede_limit is not None and g.concessions[p] >= r.concede_limit:
            return f"concede: seat {p} has conceded {r.concede_limit} time(s) already"
        if not may_concede(g, p):
            where = "in the golden round" if g.golden else "while a player sits on the barrel"
            return f"concede: a concession that costs nothing is not allowed {where}"
    return "concede: only the declarer, after the talon and before giving cards"


class ContractPhase(Phase):
    def legal(self, g: State, p: int) -> list[Action]:
        step = g.rules.bid_step
        out = list(A.value_range(A.CONTRACT, g.contract, contract_cap(g), step))
        if g.rules.concede and may_concede(g, p):
            out.append(A.CONCEDE_ACTION)
        return out

    def apply(self, g: State, p: int, a: Action) -> None:
        if a.kind == A.CONCEDE:
            concede(g, p)
        else:
            g.contract = a.value
            start_trump(g)

    def why(self, g: State, p: int, a: Action) -> str:
        if a.kind != A.CONTRACT:
            return ""
        if a.value < g.contract:
            return f"{a}: the contract can only be raised, not lowered below {g.contract}"
        return f"{a}: above the highest contract allowed ({contract_cap(g)})"


class TrumpPhase(Phase):
    """The declarer names the trump suit (the 501 game)."""

    def legal(self, g: State, p: int) -> list[Action]:
        return [A.trump(s) for s in range(4)]

    def apply(self, g: State, p: int, a: Action) -> None:
        g.trump = a.value
        g.trump_by = p
        play.start(g)
