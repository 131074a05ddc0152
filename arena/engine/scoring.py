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

The stages of the barrel live in :mod:`.barrel`, those of the golden round in
:mod:`.golden`, and the tally they share in :mod:`.tally`.  ``docs/house-rules.md`` shows
how to add a stage.
"""

from __future__ import annotations

from typing import Final

from .barrel import barrel, barrel_contracts_only, barrel_falls, target
from .cards import KQ, NINES_MASK, mask_points
from .golden import golden, golden_round
from .rules import Rules
from .state import CHANCE, OVER, State
from .tally import Stage, Tally, leaders, reached, round5

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
        pts = round5(raw[s]) if r.rounding else raw[s]
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
        each = round5(g.contract // 2)  # half-way down: 105 -> 52 -> 50
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
    t.plain[sitter] = round5(pts) if r.rounding else pts


# ---------------------------------------------------------------------- every deal


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


def dump_truck(g: State, t: Tally) -> None:
    """003: a total of exactly 555 goes to 0 (and -555 too, ``555-and-minus``)."""
    minus = g.rules.dump_truck == "555-and-minus"
    for s in range(g.n):
        if g.scores[s] == 555 or (minus and g.scores[s] == -555):
            g.scores[s] = 0


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
