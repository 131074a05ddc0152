"""The end of a deal: the scoring of a deal played out or conceded, and the totals, the
barrel and the end of the game."""

from __future__ import annotations

from typing import Any

from .cards import KQ, NINES_MASK, mask_points
from .rules import Rules
from .state import CHANCE, OVER, State


def _round5(x: int) -> int:
    """Nearest multiple of 5, halves up (62 -> 60, 63 -> 65)."""
    return (x + 2) // 5 * 5


def leaders(scores: list[int]) -> list[int]:
    """The seats with the highest total (who win a game stopped at its deal limit)."""
    top = max(scores)
    return [s for s in range(len(scores)) if scores[s] == top]


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
        return g.deals_played - g.golden_from < len(g.active)
    # 003 l.67: every player on his own deal, so a seat whose golden deal was conceded
    # (and is dealt again by the same dealer) still has it to play.
    return not g.golden_done >> golden_seat(g) & 1


def concede(g: State, p: int) -> None:
    r = g.rules
    n = g.n
    deltas = [0] * n
    g.concessions[p] += 1
    mult = r.blind_multiplier if g.blind_won else 1
    if r.concede_declarer_loses:
        deltas[p] -= g.contract * mult
    if r.concede_limit is not None and g.concessions[p] >= r.concede_limit:
        deltas[p] -= r.concede_limit_penalty
    if r.concede_opponents == "60":
        each = 60
    elif r.concede_half_round == "up":
        each = (g.contract + 5) // 10 * 5  # half to the nearest 5, half-way up
    else:
        each = _round5(g.contract // 2)  # half-way down: 105 -> 52 -> 50
    if g.blind_won and r.blind_doubles_opponents:
        each *= r.blind_multiplier
    plain = [0] * n
    for s in g.active:
        if s != p:
            plain[s] = each
    finish_deal(g, deltas, plain, contract_made=False, info={"conceded": p})


def score_deal(g: State) -> None:
    r = g.rules
    n = g.n
    d = g.declarer
    last = g.last_trick
    if g.spare and r.spare_talon == "last-trick":
        g.taken_points[last] += mask_points(g.spare)
    if g.bank:
        g.taken_points[last] += mask_points(g.bank)
    if d >= 0 and g.discards:
        to = r.discards_to
        if to == "declarer":
            g.taken_points[d] += mask_points(g.discards)
        elif to == "last-trick":
            g.taken_points[last] += mask_points(g.discards)
    raw = [g.taken_points[s] + g.marriage_points[s] for s in range(n)]
    contract_delta = [0] * n
    plain = [0] * n
    made = False
    for s in g.active:
        pts = _round5(raw[s]) if r.rounding else raw[s]
        if s == d:
            cmp_pts = pts if r.round_before_compare else raw[s]
            need = g.contract
            if g.forced_declarer and r.barrel_mode == "talon" and g.barrel_on[s]:
                need = g.contract + 1
            made = cmp_pts >= need
            mult = r.blind_multiplier if g.blind_won else 1
            contract_delta[s] = (g.contract if made else -g.contract) * mult
        elif d < 0 or r.opponents_score:
            plain[s] = pts
    if g.blind_won and r.blind_doubles_opponents:
        # 003 l.95: the blind declarer's result and the opponents' points double.
        for s in g.active:
            if s != d:
                plain[s] *= r.blind_multiplier
    if r.four_nines == "points":
        counted = r.four_nines_counted
        for s in g.active:
            dealt = g.dealt[s] & NINES_MASK == NINES_MASK
            held = g.held[s] & NINES_MASK == NINES_MASK if g.held else dealt
            if dealt if counted == "dealt" else held if counted == "after-exchange" else (
                dealt or held
            ):
                plain[s] += r.four_nines_points
    if r.virgin_bonus:
        for s in g.active:
            if not g.tricks_taken[s]:
                plain[s] += r.virgin_bonus
    if r.sitter_scores_talon and len(g.active) < n:
        sitter = next(s for s in range(n) if s not in g.active)
        t = g.orig_talon
        pts = mask_points(t)
        for su in range(4):
            if t & KQ[su] == KQ[su]:
                pts += r.marriage_values[su]
        plain[sitter] = _round5(pts) if r.rounding else pts
    finish_deal(g, contract_delta, plain, contract_made=made, info={"points": raw})


def finish_deal(
    g: State, contract_delta: list[int], plain: list[int], *, contract_made: bool,
    info: dict[str, Any],
) -> None:
    r = g.rules
    n = g.n
    d = g.declarer
    if g.golden:
        contract_delta = [x * 2 for x in contract_delta]
        plain = [x * 2 for x in plain]
    before = list(g.scores)
    barrel = r.barrel
    falls: list[int] = []
    for s in range(n):
        gain = contract_delta[s]
        if not (barrel is not None and g.barrel_on[s]):
            gain += plain[s]
        g.scores[s] += gain
    # Bolts: nothing taken in a deal the seat played.
    penalties: list[int] | None = None
    if r.bolts and "conceded" not in info:
        for s in g.active:
            if r.bolt_on == "no-trick":
                got = g.tricks_taken[s]
            else:  # "not a single point": marriages and other points count too
                got = g.taken_points[s] + g.marriage_points[s] + plain[s]
            if not got:
                g.bolts[s] += 1
                if g.bolts[s] >= r.bolt_every:
                    g.scores[s] -= r.bolt_penalty
                    g.bolts[s] = 0
                    if penalties is None:
                        penalties = [0] * n
                    penalties[s] = r.bolt_penalty
            elif r.bolt_consecutive:
                g.bolts[s] = 0
    winners: list[int] = []
    if barrel is not None:
        winners = barrel_step(g, before, contract_delta, contract_made, falls,
                                    penalties if r.barrel_bolt_penalty else None)
    else:
        winners = [s for s in range(n) if reached(g, g.scores[s])]
    if r.dump_truck != "off":
        minus = r.dump_truck == "555-and-minus"
        for s in range(n):
            if g.scores[s] == 555 or (minus and g.scores[s] == -555):
                g.scores[s] = 0
    for s in falls:
        g.barrel_falls[s] += 1
        if r.barrel_falls_reset is not None and g.barrel_falls[s] >= r.barrel_falls_reset:
            g.scores[s] = r.barrel_falls_reset_to
            g.barrel_falls[s] = 0
            if r.barrel_falls_no_barrel:
                # 003 l.81: from now on this player goes to the target without a barrel.
                g.no_barrel |= 1 << s
    if g.golden and golden_round_over(g, info, contract_made):
        winners = []
        info = {**info, "golden_restart": True}
    winners = [s for s in winners if reached(g, g.scores[s])]
    deltas = [g.scores[s] - before[s] for s in range(n)]
    rec = g.records[-1]
    result = dict(info)
    result.update(
        declarer=d, contract=g.contract, made=contract_made, deltas=deltas,
        scores=list(g.scores), blind=g.blind_won,
    )
    rec.result = result
    rec.events.append(("deal_end", tuple(deltas), tuple(g.scores), d, g.contract,
                       contract_made))
    g.deals_played += 1
    if not winners and r.max_deals is not None and g.deal_index >= r.max_deals:
        winners = leaders(g.scores)
    if winners:
        g.winners = winners
        g.phase = OVER
        g.to_act = None
        return
    if "conceded" not in info:
        # 003: after a concession the same dealer shuffles and deals again.
        g.dealer = (g.dealer + 1) % n
    g.phase = CHANCE
    g.to_act = None


def golden_round_over(g: State, info: dict[str, Any], made: bool) -> bool:
    """Count a golden deal just scored; True when the game starts again (003 l.67:
    nobody made the 120 in the whole golden round)."""
    r = g.rules
    if "conceded" not in info:
        g.golden_done |= 1 << g.declarer
    g.golden_made = g.golden_made or made
    over = golden_round_complete(
        r, g.golden_done, g.golden_from, g.deals_played, len(g.active)
    )
    if not over or g.golden_made or not r.golden_restart:
        return False
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
    return True


def reached(g: State, score: int) -> bool:
    t = g.rules.target
    return score > t if g.rules.win_above_target else score >= t


def barrel_step(
    g: State, before: list[int], contract_delta: list[int], made: bool, falls: list[int],
    penalties: list[int] | None,
) -> list[int]:
    """Barrel bookkeeping after a deal; returns the seats that reached the target.

    ``penalties`` holds the bolt penalties of this deal when they are to be written on
    the barrel too (they are already in the totals).
    """
    r = g.rules
    n = g.n
    b = r.barrel
    assert b is not None
    d = g.declarer
    exempt = g.no_barrel
    if r.barrel_mode == "contracts-only":
        for s in range(n):
            g.barrel_on[s] = g.scores[s] >= b and not exempt >> s & 1
        return [s for s in range(n) if reached(g, g.scores[s])]
    fall_to = 0 if r.barrel_fall == "zero" else b - 120
    winners = []
    # Players already on the barrel spend a try; a contract won big enough finishes.
    for s in range(n):
        if not g.barrel_on[s]:
            continue
        if reached(g, g.scores[s]) and s == d and made and (
            g.contract >= r.barrel_min_contract or g.forced_declarer
        ):
            winners.append(s)
            continue
        if s in g.active:
            g.barrel_tries[s] -= 1
        g.scores[s] = b
        if g.barrel_tries[s] <= 0:
            g.barrel_on[s] = False
            g.scores[s] = fall_to
            falls.append(s)
        if penalties is not None and penalties[s]:
            # 003 l.35 makes no exception for the barrel: the total held at 880 loses
            # the penalty too, and 760 is below the barrel.
            g.scores[s] -= penalties[s]
            if g.barrel_on[s]:
                g.barrel_on[s] = False
                falls.append(s)
    jump_wins = r.barrel_jump == "wins"
    climbers = []
    for s in range(n):
        if g.barrel_on[s] or s in winners or s in falls:
            continue
        sc = g.scores[s]
        if reached(g, sc) and (
            jump_wins or exempt >> s & 1 or (s == d and made and contract_delta[s] > 0)
        ):
            # 003 l.35: 1000 or more wins; the barrel is the interval 880 to 999.
            winners.append(s)
        elif sc >= b and not exempt >> s & 1:
            climbers.append(s)
    if r.barrel_both_fall and len(climbers) > 1:
        for s in climbers:
            g.scores[s] = fall_to
            falls.append(s)
        climbers = []
    sitting = [o for o in range(n) if g.barrel_on[o]]
    for s in climbers:
        if r.barrel_knock_off:
            # Only those sitting there before this deal fall, whatever the seat order.
            for o in sitting:
                if g.barrel_on[o]:
                    g.barrel_on[o] = False
                    g.scores[o] = fall_to
                    falls.append(o)
        g.scores[s] = b
        g.barrel_on[s] = True
        g.barrel_tries[s] = r.barrel_tries
    return winners

