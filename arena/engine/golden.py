"""The golden round (003 l.67, a house option): the first deals count double and each
dealer must play 120; when nobody makes it the game starts again."""

from __future__ import annotations

from .rules import Rules
from .state import State
from .tally import Tally


def golden(g: State, t: Tally) -> None:
    """A golden deal counts double."""
    if g.golden:
        t.contract = [x * 2 for x in t.contract]
        t.plain = [x * 2 for x in t.plain]


def golden_round_complete(
    rules: Rules, golden_done: int, golden_from: int, deals_played: int, active: int
) -> bool:
    """Whether the golden round is complete once the deal just scored is counted (003
    l.67): as many deals as active seats since it began (``golden_round_count: deals``), or
    every seat has had its golden deal (``golden_done``, a bit per seat). Public: a bot
    following the game from its events decides it the same way."""
    if rules.golden_round_count == "deals":
        return deals_played + 1 - golden_from >= active
    return golden_done == (1 << rules.players) - 1


def golden_seat(g: State) -> int:
    """Who plays the golden deal: the dealer, or forehand when the dealer sits out."""
    return g.dealer if g.dealer in g.active else g.forehand


def golden_now(g: State) -> bool:
    """Whether the deal about to be bid is a golden one."""
    if g.rules.golden_round_count == "deals":
        return g.deals_played - g.golden_from < g.nactive
    # 003 l.67: every player on his own deal, so a seat whose golden deal was conceded
    # (and is dealt again by the same dealer) still has it to play.
    return not g.golden_done >> golden_seat(g) & 1


def golden_round(g: State, t: Tally) -> None:
    """A golden deal is counted; when the round is complete and nobody made the 120 the
    game starts again from 0 (003 l.67, ``golden_restart``)."""
    r = g.rules
    if not g.golden:
        return
    if t.conceded < 0:
        g.golden_done |= 1 << g.declarer
    g.golden_made = g.golden_made or t.made
    over = golden_round_complete(r, g.golden_done, g.golden_from, g.deals_played, g.nactive)
    if not over or g.golden_made or not r.golden_restart:
        return
    n = g.n
    g.scores[:] = [0] * n
    g.bolts[:] = [0] * n
    g.barrel_on[:] = [False] * n
    g.barrel_tries[:] = [0] * n
    g.barrel_falls[:] = [0] * n
    g.concessions[:] = [0] * n
    g.no_barrel = 0
    g.golden_done = 0
    g.golden_from = g.deals_played + 1
    t.winners = []
    t.info["golden_restart"] = True
