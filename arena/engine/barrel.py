"""The barrel (бочка, kott, ämber): the scoring stages of a player near the target.

003 holds a total at the barrel and gives its player some deals to win a contract there;
000/001 only stop scoring anything but contracts won there.  Without a barrel the
target alone decides.  The stages run late in the pipeline (:mod:`.scoring`), once the
deal is written.
"""

from __future__ import annotations

from .state import State
from .tally import Tally, reached


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
