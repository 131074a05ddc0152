"""The end of a deal: a named pipeline of small scoring stages.

A deal played out to its last trick and a deal the declarer concedes each run through a
pipeline of stages, chosen once per rules configuration (:func:`plan_for`): a stage the
rules never use is not in it, so the classic game does not ask about the dump truck or
the virgin bonus at every deal.  Each stage does one thing to the :class:`Tally` of the
deal (and to the game's totals): first the deal's own points, then what every deal
shares.

========================  ====================================================  ================
stage                     what it does                                          in the pipeline
========================  ====================================================  ================
``talon_cards``           a spare talon, the bank, the discards join a pile     two-player rules
``contract``              points rounded, contract made or failed, opponents'   always (played)
``concession``            the contract lost, 60 or half to each opponent        always (conceded)
``blind_opponents``       a blind contract doubles the opponents' points        blind_doubles...
``four_nines``            four nines held score points                          four_nines
``virgin_bonus``          a player without a trick scores the bonus             virgin_bonus
``sitter_talon``          the dealer sitting out scores the talon               sitter_scores...
``golden``                a golden deal counts double                           golden_round
``totals``                the deal is written (not for a player on the barrel)  always
``bolts``                 a deal without a trick (a point) is a bolt            bolts
``barrel``                tries spent, falls, climbers; who finished            barrel (hold,
                                                                                talon)
``barrel_contracts_only`` on the barrel only contracts score                    barrel
                                                                                (contracts-only)
``target``                who reached the target                                no barrel
``dump_truck``            a total of exactly 555 goes to 0                      dump_truck
``barrel_falls``          falls counted; the reset after too many               barrel (hold,
                                                                                talon)
``golden_round``          the golden round counted; its restart                 golden_round
``result``                the deal's record, the winners, the next dealer       always
========================  ====================================================  ================

``docs/house-rules.md`` shows how to add a stage.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from .cards import KQ, NINES_MASK, mask_points
from .rules import Rules
from .state import CHANCE, OVER, State


class Tally:
    """One deal's scoring in progress, handed from stage to stage.

    ``contract`` is what the contract brings each seat (written even on the barrel) and
    ``plain`` every other point a seat scores (not written while it sits on the barrel).
    """

    __slots__ = ("before", "conceded", "contract", "falls", "info", "made", "penalties",
                 "plain", "winners")

    def __init__(self, n: int, conceded: int) -> None:
        #: The conceding seat, or -1 for a deal played out.
        self.conceded = conceded
        self.contract = [0] * n
        self.plain = [0] * n
        self.made = False
        #: What the deal's record says besides the standard fields, in order.
        self.info: dict[str, Any] = {"conceded": conceded} if conceded >= 0 else {}
        #: The totals before the deal was written.
        self.before: list[int] = []
        #: The bolt penalty each seat paid this deal (empty: none).
        self.penalties: list[int] = []
        #: Seats that fell off the barrel this deal, and those that finished the game.
        self.falls: list[int] = []
        self.winners: list[int] = []


Stage = Callable[[State, Tally], None]


def _round5(x: int) -> int:
    """Nearest multiple of 5, halves up (62 -> 60, 63 -> 65)."""
    return (x + 2) // 5 * 5


def leaders(scores: list[int]) -> list[int]:
    """The seats with the highest total (who win a game stopped at its deal limit)."""
    top = max(scores)
    return [s for s in range(len(scores)) if scores[s] == top]


def reached(rules: Rules, score: int) -> bool:
    """Whether a total reaches the target (or goes above it, ``win_above_target``)."""
    return score > rules.target if rules.win_above_target else score >= rules.target


# ---------------------------------------------------------------------- the deal's points


def talon_cards(g: State, t: Tally) -> None:
    """Cards out of the hands join a pile: the spare talon (``spare_talon``) and the bank
    go to the last trick's taker, the declarer's discards to ``discards_to``."""
    r = g.rules
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


def contract(g: State, t: Tally) -> None:
    """Each seat's card points and marriages, rounded to 5 (``rounding``); the declarer
    scores the contract when its points reach it, else loses it (``blind_multiplier``
    times for a blind contract); the opponents score their points (``opponents_score``)."""
    r = g.rules
    d = g.declarer
    raw = [g.taken_points[s] + g.marriage_points[s] for s in range(g.n)]
    t.info["points"] = raw
    for s in g.active:
        pts = _round5(raw[s]) if r.rounding else raw[s]
        if s == d:
            cmp_pts = pts if r.round_before_compare else raw[s]
            need = g.contract
            if g.forced_declarer and r.barrel_mode == "talon" and g.barrel_on[s]:
                need = g.contract + 1
            t.made = cmp_pts >= need
            mult = r.blind_multiplier if g.blind_won else 1
            t.contract[s] = (g.contract if t.made else -g.contract) * mult
        elif d < 0 or r.opponents_score:
            t.plain[s] = pts


def concession(g: State, t: Tally) -> None:
    """The conceding declarer loses the contract (``concede_declarer_loses``) and, at the
    limit, the penalty; each opponent scores 60 or half the contract."""
    r = g.rules
    p = t.conceded
    g.concessions[p] += 1
    mult = r.blind_multiplier if g.blind_won else 1
    if r.concede_declarer_loses:
        t.contract[p] -= g.contract * mult
    if r.concede_limit is not None and g.concessions[p] >= r.concede_limit:
        t.contract[p] -= r.concede_limit_penalty
    if r.concede_opponents == "60":
        each = 60
    elif r.concede_half_round == "up":
        each = (g.contract + 5) // 10 * 5  # half to the nearest 5, half-way up
    else:
        each = _round5(g.contract // 2)  # half-way down: 105 -> 52 -> 50
    for s in g.active:
        if s != p:
            t.plain[s] = each


def blind_opponents(g: State, t: Tally) -> None:
    """003 l.95: a blind contract doubles the opponents' points too."""
    if g.blind_won:
        for s in g.active:
            if s != g.declarer:
                t.plain[s] *= g.rules.blind_multiplier


def four_nines(g: State, t: Tally) -> None:
    """Four nines in one hand score ``four_nines_points``: the hand as dealt, after the
    exchange, or either (``four_nines_counted``)."""
    r = g.rules
    counted = r.four_nines_counted
    for s in g.active:
        dealt = g.dealt[s] & NINES_MASK == NINES_MASK
        held = g.held[s] & NINES_MASK == NINES_MASK if g.held else dealt
        if counted == "dealt":
            has = dealt
        elif counted == "after-exchange":
            has = held
        else:
            has = dealt or held
        if has:
            t.plain[s] += r.four_nines_points


def virgin_bonus(g: State, t: Tally) -> None:
    """004: a player who took no trick scores ``virgin_bonus``."""
    for s in g.active:
        if not g.tricks_taken[s]:
            t.plain[s] += g.rules.virgin_bonus


def sitter_talon(g: State, t: Tally) -> None:
    """003: the dealer sitting out scores the talon's points and any marriage in it."""
    r = g.rules
    if g.nactive == g.n:
        return
    sitter = next(s for s in range(g.n) if s not in g.active)
    pile = g.orig_talon
    pts = mask_points(pile)
    for su in range(4):
        if pile & KQ[su] == KQ[su]:
            pts += r.marriage_values[su]
    t.plain[sitter] = _round5(pts) if r.rounding else pts


# ---------------------------------------------------------------------- every deal


def golden(g: State, t: Tally) -> None:
    """A golden deal counts double."""
    if g.golden:
        t.contract = [x * 2 for x in t.contract]
        t.plain = [x * 2 for x in t.plain]


def totals(g: State, t: Tally) -> None:
    """Write the deal: the contract always, other points not while on the barrel."""
    t.before = list(g.scores)
    barrel = g.rules.barrel is not None
    for s in range(g.n):
        gain = t.contract[s]
        if not (barrel and g.barrel_on[s]):
            gain += t.plain[s]
        g.scores[s] += gain


def bolts(g: State, t: Tally) -> None:
    """A seat that took nothing in a deal it played gets a bolt (``bolt_on``: no trick
    or no point); every ``bolt_every``-th costs ``bolt_penalty``.  A conceded deal gives
    no bolt."""
    r = g.rules
    if t.conceded >= 0:
        return
    for s in g.active:
        if r.bolt_on == "no-trick":
            got = g.tricks_taken[s]
        else:  # "not a single point": marriages and other points count too
            got = g.taken_points[s] + g.marriage_points[s] + t.plain[s]
        if not got:
            g.bolts[s] += 1
            if g.bolts[s] >= r.bolt_every:
                g.scores[s] -= r.bolt_penalty
                g.bolts[s] = 0
                if not t.penalties:
                    t.penalties = [0] * g.n
                t.penalties[s] = r.bolt_penalty
        elif r.bolt_consecutive:
            g.bolts[s] = 0


def target(g: State, t: Tally) -> None:
    """Without a barrel: whoever reached the target."""
    t.winners = [s for s in range(g.n) if reached(g.rules, g.scores[s])]


def barrel_contracts_only(g: State, t: Tally) -> None:
    """000/001: from the barrel on, only contracts won score (:func:`totals`)."""
    b = g.rules.barrel
    assert b is not None
    exempt = g.no_barrel
    for s in range(g.n):
        g.barrel_on[s] = g.scores[s] >= b and not exempt >> s & 1
    target(g, t)


def barrel(g: State, t: Tally) -> None:
    """003: the total is held at the barrel; each deal there spends a try, a contract of
    ``barrel_min_contract`` or more won finishes, the last failed try falls
    (``barrel_fall``); a bolt penalty is written on the barrel too
    (``barrel_bolt_penalty``).  Reaching the target from below wins (``barrel_jump``);
    reaching the barrel climbs on it, knocking off who sits there
    (``barrel_knock_off``), or both falling when two climb at once (``barrel_both_fall``).
    """
    r = g.rules
    n = g.n
    b = r.barrel
    assert b is not None
    d = g.declarer
    made = t.made
    exempt = g.no_barrel
    penalties = t.penalties if r.barrel_bolt_penalty else []
    falls = t.falls
    fall_to = 0 if r.barrel_fall == "zero" else b - 120
    winners = t.winners
    # Players already on the barrel spend a try; a contract won big enough finishes.
    for s in range(n):
        if not g.barrel_on[s]:
            continue
        if reached(r, g.scores[s]) and s == d and made and (
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
        if penalties and penalties[s]:
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
        if reached(r, sc) and (
            jump_wins or exempt >> s & 1 or (s == d and made and t.contract[s] > 0)
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


def dump_truck(g: State, t: Tally) -> None:
    """003: a total of exactly 555 goes to 0 (and -555 too, ``555-and-minus``)."""
    minus = g.rules.dump_truck == "555-and-minus"
    for s in range(g.n):
        if g.scores[s] == 555 or (minus and g.scores[s] == -555):
            g.scores[s] = 0


def barrel_falls(g: State, t: Tally) -> None:
    """Falls from the barrel are counted; the ``barrel_falls_reset``-th resets the total
    (to ``barrel_falls_reset_to``), for good off the barrel with
    ``barrel_falls_no_barrel`` (003 l.81)."""
    r = g.rules
    for s in t.falls:
        g.barrel_falls[s] += 1
        if r.barrel_falls_reset is not None and g.barrel_falls[s] >= r.barrel_falls_reset:
            g.scores[s] = r.barrel_falls_reset_to
            g.barrel_falls[s] = 0
            if r.barrel_falls_no_barrel:
                g.no_barrel |= 1 << s


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


def result(g: State, t: Tally) -> None:
    """The deal's record and event, then the end of the game (the target reached, or the
    deal limit) or the next deal (the same dealer after a concession, 003)."""
    r = g.rules
    n = g.n
    d = g.declarer
    winners = [s for s in t.winners if reached(r, g.scores[s])]
    deltas = [g.scores[s] - t.before[s] for s in range(n)]
    rec = g.records[-1]
    record = dict(t.info)
    record.update(
        declarer=d, contract=g.contract, made=t.made, deltas=deltas,
        scores=list(g.scores), blind=g.blind_won,
    )
    rec.result = record
    rec.events.append(("deal_end", tuple(deltas), tuple(g.scores), d, g.contract, t.made))
    g.deals_played += 1
    if not winners and r.max_deals is not None and g.deal_index >= r.max_deals:
        winners = leaders(g.scores)
    g.to_act = None
    if winners:
        g.winners = winners
        g.phase = OVER
        return
    if t.conceded < 0:
        g.dealer = (g.dealer + 1) % n
    g.phase = CHANCE


# ---------------------------------------------------------------------- the pipelines


class Plan:
    """The stages of one rules configuration: for a deal played out, and conceded."""

    __slots__ = ("conceded", "played", "rules")

    def __init__(self, rules: Rules) -> None:
        self.rules = r = rules
        played: list[Stage] = []
        if r.spare_talon == "last-trick" or r.exchange in ("bank", "discard"):
            played.append(talon_cards)
        played.append(contract)
        conceded: list[Stage] = [concession]
        if r.blind_doubles_opponents:
            played.append(blind_opponents)
            conceded.append(blind_opponents)
        if r.four_nines == "points":
            played.append(four_nines)
        if r.virgin_bonus:
            played.append(virgin_bonus)
        if r.sitter_scores_talon:
            played.append(sitter_talon)
        end: list[Stage] = []
        if r.golden_round:
            end.append(golden)
        end.append(totals)
        if r.bolts:
            end.append(bolts)
        if r.barrel is None:
            end.append(target)
        elif r.barrel_mode == "contracts-only":
            end.append(barrel_contracts_only)
        else:
            end.append(barrel)
        if r.dump_truck != "off":
            end.append(dump_truck)
        if r.barrel is not None and r.barrel_mode != "contracts-only":
            end.append(barrel_falls)
        if r.golden_round:
            end.append(golden_round)
        end.append(result)
        self.played: tuple[Stage, ...] = tuple(played + end)
        self.conceded: tuple[Stage, ...] = tuple(conceded + end)


#: Plans by rules object: rules never change, and a tournament plays a handful.
_PLANS: dict[int, Plan] = {}
_PLANS_MAX: Final = 256


def plan_for(rules: Rules) -> Plan:
    """The scoring stages of ``rules``, built once."""
    plan = _PLANS.get(id(rules))
    if plan is None or plan.rules is not rules:
        if len(_PLANS) >= _PLANS_MAX:
            _PLANS.clear()
        plan = _PLANS[id(rules)] = Plan(rules)
    return plan


def stage_names(rules: Rules, conceded: bool = False) -> list[str]:
    """The stages a deal goes through under ``rules`` (to read, and for the docs)."""
    plan = plan_for(rules)
    return [s.__name__ for s in (plan.conceded if conceded else plan.played)]


def _run(g: State, stages: tuple[Stage, ...], t: Tally) -> None:
    for stage in stages:
        stage(g, t)


def score_deal(g: State) -> None:
    """The last trick is taken: score the deal."""
    _run(g, plan_for(g.rules).played, Tally(g.n, -1))


def concede(g: State, p: int) -> None:
    """The declarer ``p`` concedes: score the concession."""
    _run(g, plan_for(g.rules).conceded, Tally(g.n, p))
